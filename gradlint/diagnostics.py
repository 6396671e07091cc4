"""Diagnostics, fixes and edits: the values every layer of gradlint exchanges."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from typing import Any


class Severity(str, Enum):
    """How serious a finding is; the spec fixes one per rule."""

    ERROR = "error"
    WARNING = "warning"
    INFO = "info"  # advice, off unless selected: SARIF `note`, LSP `Information`


class Applicability(str, Enum):
    """When a fix may be applied, as in ruff: safe (by ``--fix``) or unsafe (on request)."""

    SAFE = "safe"
    UNSAFE = "unsafe"


@dataclass(frozen=True, order=True)
class Span:
    """A source range; lines and columns are 1-based, the end column exclusive."""

    line: int
    column: int
    end_line: int
    end_column: int


@dataclass(frozen=True)
class Edit:
    """Replace the text of ``span`` with ``content`` (an empty span inserts)."""

    span: Span
    content: str

    def to_dict(self) -> dict[str, Any]:
        """JSON form, the shape the CLI prints and the language server reads."""
        return {
            "line": self.span.line,
            "column": self.span.column,
            "end_line": self.span.end_line,
            "end_column": self.span.end_column,
            "content": self.content,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Edit:
        """Inverse of :meth:`to_dict`."""
        span = Span(data["line"], data["column"], data["end_line"], data["end_column"])
        return cls(span, data["content"])


@dataclass(frozen=True)
class Fix:
    """A set of non-overlapping edits that resolves one diagnostic."""

    applicability: Applicability
    message: str
    edits: tuple[Edit, ...]

    def to_dict(self) -> dict[str, Any]:
        """JSON form."""
        return {
            "applicability": self.applicability.value,
            "message": self.message,
            "edits": [e.to_dict() for e in self.edits],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Fix:
        """Inverse of :meth:`to_dict`."""
        return cls(
            Applicability(data["applicability"]),
            data["message"],
            tuple(Edit.from_dict(e) for e in data["edits"]),
        )


@dataclass(frozen=True)
class Diagnostic:
    """One finding: where, which rule, what to do, and perhaps how to fix it. ``message`` is
    one short line (the ``text`` and ``concise`` formats); ``detail`` is the longer
    explanation the ``full`` format, JSON and SARIF add."""

    path: str
    span: Span
    code: str
    name: str
    severity: Severity
    message: str
    fix: Fix | None = field(default=None, compare=False)
    cell: int | None = None  # notebooks: 1-based cell number; the span is then within that cell
    detail: str | None = field(default=None, compare=False)

    @property
    def line(self) -> int:
        return self.span.line

    @property
    def column(self) -> int:
        return self.span.column

    def sort_key(self) -> tuple[str, int, int, int, str]:
        """Stable report order: path, cell (notebooks), line, column, code."""
        return (self.path, self.cell or 0, self.span.line, self.span.column, self.code)

    def to_dict(self) -> dict[str, Any]:
        """JSON form with the keys the CLI documents (plus ``cell`` for notebooks)."""
        data: dict[str, Any] = {
            "path": self.path,
            "line": self.span.line,
            "column": self.span.column,
            "end_line": self.span.end_line,
            "end_column": self.span.end_column,
            "code": self.code,
            "name": self.name,
            "severity": self.severity.value,
            "message": self.message,
            "fix": self.fix.to_dict() if self.fix else None,
            "detail": self.detail,
        }
        if self.cell is not None:
            data["cell"] = self.cell
        return data
