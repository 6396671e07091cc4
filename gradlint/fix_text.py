"""Fix edits applied to text: the one place that turns a fix's (line, column) spans into
offsets and writes its edits with the file's line endings. Pure text, no analysis, so the
engine and the fixer can both use it."""

from __future__ import annotations

from collections.abc import Iterable

from gradlint.diagnostics import Edit, Fix
from gradlint.source import python_lines


class Offsets:
    """Convert 1-based (line, column) to offsets in ``text``; lines are numbered as Python
    numbers them, like diagnostics (a lone ``\\r`` ends a line too)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.starts = [0]
        for line in python_lines(text)[:-1]:
            self.starts.append(self.starts[-1] + len(line))

    def __call__(self, line: int, column: int) -> int:
        if line > len(self.starts):
            return len(self.text)
        start = self.starts[line - 1]
        end = self.starts[line] if line < len(self.starts) else len(self.text)
        return min(start + column - 1, end)


def newline_of(text: str) -> str:
    """The file's line ending: that of its first line (``\\n`` when it has none)."""
    index = text.find("\n")
    if index > 0 and text[index - 1] == "\r":
        return "\r\n"
    return "\n"


def apply_fixes(text: str, fixes: Iterable[Fix]) -> str:
    """``text`` with the edits of ``fixes`` (non-overlapping) applied; inserted text gets
    the line ending of the line it lands in (in a file of mixed endings, its new
    neighbours')."""
    offsets = Offsets(text)
    default = newline_of(text)
    edits: list[tuple[int, int, str, str]] = []
    for fix in fixes:
        for edit in fix.edits:
            start = offsets(edit.span.line, edit.span.column)
            end = offsets(edit.span.end_line, edit.span.end_column)
            newline = _newline_at(text, start, default)
            edits.append((start, end, _with_newline(edit, newline), newline))
    for start, end, content, newline in sorted(edits, reverse=True):
        if content and start == len(text) and text and not text.endswith(("\n", "\r")):
            # after a last line without a line ending: the file keeps ending without one
            content = newline + (content[: -len(newline)] if content.endswith(newline) else content)
        text = text[:start] + content + text[end:]
    return text


def _newline_at(text: str, offset: int, default: str) -> str:
    """The line ending of the line holding ``offset`` (of the line before, on a last line
    without one; ``default`` in a file of one line)."""
    end = text.find("\n", offset)
    if end == -1:
        end = text.rfind("\n", 0, offset)
        if end == -1:
            return default
    return "\r\n" if end > 0 and text[end - 1] == "\r" else "\n"


def _with_newline(edit: Edit, newline: str) -> str:
    content = edit.content.replace("\r\n", "\n")
    return content.replace("\n", newline) if newline != "\n" else content
