"""Reporters: the text and JSON forms of a run's diagnostics."""

from __future__ import annotations

import json
from typing import TextIO

from rich.console import Console
from rich.text import Text

from gradlint.diagnostics import Diagnostic, Severity

_STYLE = {Severity.ERROR: "bold red", Severity.WARNING: "bold yellow"}


def render_text(diagnostics: list[Diagnostic], files_checked: int, console: Console) -> None:
    """``path:line:col: CODE message`` lines, then a summary line."""
    for d in diagnostics:
        line = Text()
        line.append(f"{d.path}:{d.line}:{d.column}: ", style="bold")
        line.append(d.code, style=_STYLE[d.severity])
        line.append(f" {d.message}")
        console.print(line, soft_wrap=True)
    console.print(summary(diagnostics, files_checked), soft_wrap=True, highlight=False)


def summary(diagnostics: list[Diagnostic], files_checked: int) -> str:
    """``Found N problems in M files`` or ``All checks passed!``."""
    if not diagnostics:
        noun = "file" if files_checked == 1 else "files"
        return f"All checks passed! ({files_checked} {noun} checked)"
    files = len({d.path for d in diagnostics})
    problems = "problem" if len(diagnostics) == 1 else "problems"
    noun = "file" if files == 1 else "files"
    return f"Found {len(diagnostics)} {problems} in {files} {noun}."


def render_json(diagnostics: list[Diagnostic], out: TextIO) -> None:
    """A JSON list of diagnostic objects, sorted by path, line, column, code."""
    json.dump([d.to_dict() for d in diagnostics], out, indent=2)
    out.write("\n")
