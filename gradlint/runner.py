"""Run the core over files: read, lint, collect; I/O problems become GL000 per file."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from gradlint.diagnostics import Diagnostic, Span
from gradlint.engine import lint_bytes
from gradlint.notebook import lint_notebook
from gradlint.rules import SYNTAX_ERROR
from gradlint.settings import Settings


@dataclass
class RunResult:
    """Diagnostics of a run plus how many files were checked."""

    diagnostics: list[Diagnostic] = field(default_factory=list)
    files_checked: int = 0


def display_path(path: Path) -> str:
    """Paths relative to the current directory where possible, with forward slashes."""
    try:
        rel = path.resolve().relative_to(Path.cwd().resolve())
        return rel.as_posix()
    except (ValueError, OSError):
        return path.as_posix()


def lint_file(path: Path, settings: Settings) -> list[Diagnostic]:
    """Lint one file (a notebook cell by cell) from disk; an unreadable file is one GL000."""
    shown = display_path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        if not settings.enabled(SYNTAX_ERROR.code):
            return []
        reason = exc.strerror or exc.__class__.__name__
        return [Diagnostic(shown, Span(1, 1, 1, 1), SYNTAX_ERROR.code, SYNTAX_ERROR.name,
                           SYNTAX_ERROR.severity, f"I/O error: cannot read file: {reason}")]
    if path.suffix == ".ipynb":
        return lint_notebook(data, shown, settings)
    return lint_bytes(data, shown, settings)


def run(paths: list[Path], settings: Settings | Mapping[Path, Settings]) -> RunResult:
    """Lint every file in ``paths`` in order, with one settings value or one per path."""
    result = RunResult()
    for path in paths:
        result.diagnostics.extend(lint_file(path, settings if isinstance(settings, Settings) else settings[path]))
        result.files_checked += 1
    result.diagnostics.sort(key=Diagnostic.sort_key)
    return result
