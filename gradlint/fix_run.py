"""``gradlint check --fix`` / ``--diff``: say what the fixes of a run changed."""

from __future__ import annotations

import difflib
from collections import Counter
from typing import TextIO

from gradlint.reporters.model import shown_path
from gradlint.writer import FileFix


def changed(files: list[FileFix]) -> list[FileFix]:
    """The files the fixes change."""
    return [f for f in files if f.changed]


def fixed_count(files: list[FileFix]) -> int:
    """How many problems the fixes resolve."""
    return sum(len(f.fixed) for f in files)


def render_diff(files: list[FileFix], out: TextIO) -> None:
    """A unified diff of every file the fixes would change."""
    for outcome in changed(files):
        before = outcome.before.splitlines(keepends=True)
        after = outcome.after.splitlines(keepends=True)
        shown = shown_path(outcome.display)
        for line in difflib.unified_diff(before, after, fromfile=shown, tofile=shown):
            out.write(line if line.endswith("\n") else line + "\n")
        out.write("\n")


def render_fixes(files: list[FileFix], out: TextIO, would: bool = False) -> None:
    """``--show-fixes``: how many of each rule were fixed in each file."""
    fixed = [f for f in files if f.fixed and f.error is None]
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


def problems(files: list[FileFix]) -> list[str]:
    """One line per file that could not be fixed or had a fix reverted."""
    lines = []
    for outcome in files:
        if outcome.error:
            lines.append(f"{shown_path(outcome.display)}: {outcome.error}")
        for reverted in outcome.reverted:
            d = reverted.diagnostic
            lines.append(f"{shown_path(outcome.display)}:{d.line}:{d.column}: {d.code} fix reverted: the result does not "
                         f"parse ({reverted.error})")
    return lines
