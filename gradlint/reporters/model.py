"""What a reporter is given: the run's diagnostics, and how to present them."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from gradlint.diagnostics import Diagnostic


@dataclass
class Report:
    """The diagnostics of a run (sorted), how many files were checked, and texts already in
    memory by display path (stdin), which the ``full`` format shows instead of reading files."""

    diagnostics: list[Diagnostic]
    files_checked: int
    sources: dict[str, str] = field(default_factory=dict)
    fixed: int = 0  # problems `--fix` fixed (the diagnostics are what remains)


@dataclass(frozen=True)
class ReportOptions:
    """``--color``, ``--quiet``, ``--statistics`` and ``--unsafe-fixes`` as resolved by the
    command line (unsafe fixes count as fixable, ``[*]``, only with the last)."""

    color: bool = False
    quiet: bool = False
    statistics: bool = False
    unsafe_fixes: bool = False


def location(diagnostic: Diagnostic) -> str:
    """``path:line:col``, or ``path:cell N:line:col`` for a notebook cell (the path printable)."""
    cell = f"cell {diagnostic.cell}:" if diagnostic.cell is not None else ""
    return f"{shown_path(diagnostic.path)}:{cell}{diagnostic.line}:{diagnostic.column}"


def shown_path(path: str) -> str:
    """``path`` as one printable line: bytes that are not UTF-8 as ``\\xff``, control characters
    (a newline in a file name) as ``\\n`` or ``\\x1b``, so no name can forge a report line."""
    text = os.fsencode(path).decode("utf-8", "backslashreplace")
    return _CONTROL.sub(_escape_control, text)


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def _escape_control(match: re.Match[str]) -> str:
    char = match.group()
    return {"\n": "\\n", "\r": "\\r", "\t": "\\t"}.get(char) or (
        f"\\x{ord(char):02x}" if ord(char) < 0x100 else f"\\u{ord(char):04x}")
