"""Positions between gradlint and LSP.

gradlint counts lines and columns from 1 in code points; LSP counts from 0 and measures
columns in the code units of the negotiated position encoding (UTF-16 unless the client
offers another). Everything here is pure and works on the text snapshot that was linted.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from gradlint.diagnostics import Span

UTF8 = "utf-8"
UTF16 = "utf-16"
UTF32 = "utf-32"


_BREAK = re.compile(r"\r\n|\r|\n")
_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+")


def split_lines(text: str) -> list[str]:
    """The lines of ``text`` without their line breaks, split where LSP clients and Python
    split them (``\\n``, ``\\r\\n``, ``\\r``; not at a form feed or ``\\u2028``); a text
    ending with a break has an empty last line."""
    return _BREAK.split(text)


def lines_with_ends(text: str) -> list[str]:
    """The lines of ``text`` with their line breaks (split like :func:`split_lines`)."""
    return _LINE.findall(text)


def _units(chars: str, encoding: str) -> int:
    if encoding == UTF32:
        return len(chars)
    if encoding == UTF8:
        return len(chars.encode("utf-8", "surrogatepass"))
    return len(chars.encode("utf-16-le", "surrogatepass")) // 2


@dataclass(frozen=True)
class Point:
    """An LSP position: 0-based line and column in code units."""

    line: int
    character: int


def to_client(lines: list[str], line: int, column: int, encoding: str = UTF16) -> Point:
    """Convert a gradlint (1-based, code-point) position, clamped into the text."""
    index = min(max(line - 1, 0), len(lines) - 1)
    text = lines[index]
    chars = min(max(column - 1, 0), len(text))
    return Point(index, _units(text[:chars], encoding))


def span_to_client(lines: list[str], span: Span, encoding: str = UTF16) -> tuple[Point, Point]:
    """Convert a gradlint span to an LSP start and end."""
    start = to_client(lines, span.line, span.column, encoding)
    end = to_client(lines, span.end_line, span.end_column, encoding)
    return start, max(start, end, key=lambda p: (p.line, p.character))


def from_client(lines: list[str], point: Point, encoding: str = UTF16) -> tuple[int, int]:
    """Convert an LSP position to a 0-based line and 0-based code-point column (clamped)."""
    if point.line >= len(lines):
        return len(lines) - 1, len(lines[-1])
    text = lines[max(point.line, 0)]
    units = 0
    for index, char in enumerate(text):
        if units >= point.character:
            return point.line, index
        units += _units(char, encoding)
    return max(point.line, 0), len(text)
