"""What a reporter is given: the run's diagnostics, and how to present them."""

from __future__ import annotations

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
    """``path:line:col``, or ``path:cell N:line:col`` for a notebook cell."""
    cell = f"cell {diagnostic.cell}:" if diagnostic.cell is not None else ""
    return f"{diagnostic.path}:{cell}{diagnostic.line}:{diagnostic.column}"
