"""``gradlint check --fix`` / ``--diff``: fix every file of a run and say what changed."""

from __future__ import annotations

import difflib
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TextIO

from gradlint.diagnostics import Diagnostic
from gradlint.fixer import FileFix, fix_file
from gradlint.reporters.model import shown_path
from gradlint.runner import display_path
from gradlint.settings import Settings


@dataclass
class FixRun:
    """Every file's fix outcome, in the order the files were given."""

    files: list[FileFix] = field(default_factory=list)

    @property
    def remaining(self) -> list[Diagnostic]:
        """What is still reported after fixing, sorted."""
        return sorted((d for f in self.files for d in f.remaining), key=Diagnostic.sort_key)

    @property
    def fixed(self) -> list[Diagnostic]:
        return [d for f in self.files for d in f.fixed]

    @property
    def changed(self) -> list[FileFix]:
        return [f for f in self.files if f.changed]


def fix_paths(paths: list[Path], settings: Settings | Mapping[Path, Settings], unsafe: bool, write: bool,
              timeout: float = 0) -> FixRun:
    """Fix each file in ``paths`` (writing it back when ``write``; ``timeout``: the CPU
    seconds the analysis of one file may take, 0 for no limit)."""
    run = FixRun()
    for path in paths:
        chosen = settings if isinstance(settings, Settings) else settings[path]
        run.files.append(fix_file(path, display_path(path), chosen, unsafe, write, timeout))
    return run


def render_diff(run: FixRun, out: TextIO) -> None:
    """A unified diff of every file the fixes would change."""
    for outcome in run.changed:
        before = outcome.before.splitlines(keepends=True)
        after = outcome.after.splitlines(keepends=True)
        shown = shown_path(outcome.display)
        for line in difflib.unified_diff(before, after, fromfile=shown, tofile=shown):
            out.write(line if line.endswith("\n") else line + "\n")
        out.write("\n")


def render_fixes(run: FixRun, out: TextIO, would: bool = False) -> None:
    """``--show-fixes``: how many of each rule were fixed in each file."""
    fixed = [f for f in run.files if f.fixed and f.error is None]
    total = sum(len(f.fixed) for f in fixed)
    if not total:
        out.write("No problems would be fixed.\n" if would else "No problems fixed.\n")
        return
    noun = "problem" if total == 1 else "problems"
    out.write(f"{'Would fix' if would else 'Fixed'} {total} {noun}:\n")
    for outcome in fixed:
        out.write(f"- {shown_path(outcome.display)}:\n")
        counts = Counter((d.code, d.name) for d in outcome.fixed)
        for (code, name), count in sorted(counts.items()):
            out.write(f"    {count} \u00d7 {code} ({name})\n")


def problems(run: FixRun) -> list[str]:
    """One line per file that could not be fixed or had a fix reverted."""
    lines = []
    for outcome in run.files:
        if outcome.error:
            lines.append(f"{shown_path(outcome.display)}: {outcome.error}")
        for reverted in outcome.reverted:
            d = reverted.diagnostic
            lines.append(f"{shown_path(outcome.display)}:{d.line}:{d.column}: {d.code} fix reverted: the result does not "
                         f"parse ({reverted.error})")
    return lines
