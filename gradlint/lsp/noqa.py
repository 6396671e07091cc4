"""``# noqa: GLxxx`` comments: adding a code to a line, finding the code under the cursor.

The comment syntax is the core's (:mod:`gradlint.suppression`), so what the editor writes is
exactly what the linter honours.
"""

from __future__ import annotations

import io
import tokenize
from dataclasses import dataclass

from gradlint.lsp.positions import split_lines
from gradlint.suppression import CODE, IGNORE, NOQA


@dataclass(frozen=True)
class LineEdit:
    """Replace code points ``start:end`` of one line (0-based) with ``content``."""

    line: int
    start: int
    end: int
    content: str


def comment_start(source: str, line: int) -> int | None:
    """Code-point column where the comment of 0-based ``line`` starts, if it has one.

    Uses the tokenizer so a ``#`` inside a string is not a comment; returns -1 when the
    line ends inside a multi-line string (no comment may be appended there).
    """
    lines = split_lines(source)
    if line >= len(lines) or "#" not in lines[line] and not _may_continue_string(lines[line]):
        return None
    try:
        lf_only = source.replace("\r\n", "\n").replace("\r", "\n")  # lines as split_lines has them
        for token in tokenize.generate_tokens(io.StringIO(lf_only).readline):
            if token.start[0] - 1 > line:
                break
            if token.type == tokenize.COMMENT and token.start[0] - 1 == line:
                return token.start[1]
            if token.start[0] - 1 <= line < token.end[0] - 1:
                return -1  # a string (or f-string part) runs past the end of this line
    except (tokenize.TokenError, SyntaxError, IndentationError):
        match = NOQA.search(lines[line]) or IGNORE.search(lines[line])
        return match.start() if match else None
    return None


def _may_continue_string(text: str) -> bool:
    return '"""' in text or "'''" in text


def add_code(source: str, line: int, code: str) -> LineEdit | None:
    """The edit that suppresses ``code`` on 0-based ``line``, or None if it is already
    suppressed there (or no comment can be placed on that line)."""
    text = split_lines(source)[line]
    start = comment_start(source, line)
    if start == -1:
        return None
    comment = text[start:] if start is not None else ""
    for pattern in (NOQA, IGNORE):
        for match in pattern.finditer(comment):
            codes = match.group("codes")
            if codes is None or code.upper() in {c.upper() for c in CODE.findall(codes)}:
                return None  # a blanket suppression, or one that names the code already
    listed = NOQA.search(comment)
    if listed and start is not None:
        at = start + listed.end("codes")
        return LineEdit(line, at, at, f", {code}")
    content_end = len(text.rstrip())
    return LineEdit(line, content_end, len(text), f"  # noqa: {code}")


def code_at(line_text: str, column: int) -> str | None:
    """The rule code of a noqa or ``gradlint: ignore[...]`` comment under 0-based ``column``."""
    for pattern in (NOQA, IGNORE):
        for match in pattern.finditer(line_text):
            if match.group("codes") is None:
                continue
            offset = match.start("codes")
            for code in CODE.finditer(match.group("codes")):
                if offset + code.start() <= column < offset + code.end() and code.group().upper().startswith("GL"):
                    return code.group().upper()
    return None
