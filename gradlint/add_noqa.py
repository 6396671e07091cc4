"""``--add-noqa``: write a ``# noqa: GLxxx`` on every reported line, so a codebase can adopt
gradlint at zero findings and fix them over time.

Codes are appended to an existing ``# noqa: ...`` list; a line with a bare ``# noqa`` is
already suppressed. A line that ends inside a multi-line string or with a backslash
continuation cannot carry a comment and is left alone (counted as skipped).
"""

from __future__ import annotations

import codecs
import io
import re
import tokenize
from dataclasses import dataclass
from pathlib import Path

from gradlint.catalogue import SYNTAX_ERROR, UNUSED_SUPPRESSION
from gradlint.diagnostics import Diagnostic
from gradlint.notebook import NotebookError, read_notebook, write_cells
from gradlint.source import SourceError, decode, encode, read_source_file
from gradlint.suppression import CODE, NOQA
from gradlint.writer import write_atomic

_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)?")
_NOT_SUPPRESSIBLE = frozenset({SYNTAX_ERROR.code, UNUSED_SUPPRESSION.code})


@dataclass
class Added:
    """What ``--add-noqa`` did to one text: directives written and lines it could not mark."""

    text: str
    added: int = 0
    skipped: int = 0


def _line_facts(text: str) -> tuple[dict[int, tuple[int, str]], set[int]]:
    """Comments by line (column, text), and lines that cannot take a trailing comment."""
    comments: dict[int, tuple[int, str]] = {}
    blocked: set[int] = set()
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.COMMENT:
                comments[token.start[0]] = (token.start[1], token.string)
            elif token.start[0] < token.end[0] and token.type not in (tokenize.NL, tokenize.NEWLINE):
                blocked.update(range(token.start[0], token.end[0]))
    except (tokenize.TokenError, SyntaxError):
        return {}, set(range(1, text.count("\n") + 2))
    return comments, blocked


def add_noqa_text(text: str, diagnostics: list[Diagnostic]) -> Added:
    """``text`` with a suppression for each of ``diagnostics`` (all of this one text)."""
    wanted: dict[int, list[str]] = {}
    for d in diagnostics:
        if d.code not in _NOT_SUPPRESSIBLE and d.code not in wanted.get(d.line, []):
            wanted.setdefault(d.line, []).append(d.code)
    if not wanted:
        return Added(text)
    comments, blocked = _line_facts(text)
    lines = _LINE.findall(text)[:-1] or [""]
    result = Added(text)
    for number, codes in sorted(wanted.items()):
        if number > len(lines):
            continue
        body = lines[number - 1].rstrip("\r\n")
        ending = lines[number - 1][len(body):]
        new = _mark(body, sorted(codes), comments.get(number))
        if new is None:
            continue
        if number in blocked or body.rstrip().endswith("\\"):
            result.skipped += 1
            continue
        if new != body:
            lines[number - 1] = new + ending
            result.added += 1
    result.text = "".join(lines)
    return result


def _mark(body: str, codes: list[str], comment: tuple[int, str] | None) -> str | None:
    """The line with ``codes`` suppressed, or None when it already is."""
    if comment is not None:
        column, text = comment
        for match in NOQA.finditer(text):
            listed = match.group("codes")
            if listed is None:
                return None  # a bare noqa comment suppresses every code
            missing = [c for c in codes if c not in {x.upper() for x in CODE.findall(listed)}]
            if not missing:
                return None
            at = column + match.end("codes")
            return body[:at] + ", " + ", ".join(missing) + body[at:]
    return body.rstrip() + "  # noqa: " + ", ".join(codes)


def add_noqa_file(path: Path, diagnostics: list[Diagnostic]) -> Added:
    """Add suppressions to the file at ``path`` (a notebook cell by cell) and write it
    atomically when something changed. Raises ``OSError`` when it cannot be read or written."""
    data = read_source_file(path)
    if path.suffix == ".ipynb":
        return _add_to_notebook(path, data, diagnostics)
    try:
        decoded = decode(data)
    except SourceError:
        return Added("")
    result = add_noqa_text(decoded.text, diagnostics)
    if result.added:
        write_atomic(path, encode(decoded, result.text), expected=data)
    return result


def _add_to_notebook(path: Path, data: bytes, diagnostics: list[Diagnostic]) -> Added:
    bom = codecs.BOM_UTF8 if data.startswith(codecs.BOM_UTF8) else b""
    try:
        notebook = read_notebook(data[len(bom):].decode("utf-8"))
    except (UnicodeDecodeError, NotebookError):
        return Added("")
    total = Added("")
    sources: dict[int, str] = {}
    for cell in notebook.cells:
        found = [d for d in diagnostics if d.cell == cell.number]
        result = add_noqa_text(cell.text, found)
        total.added += result.added
        total.skipped += result.skipped
        if result.added:
            sources[cell.number] = result.text
    if sources:
        try:
            total.text = write_cells(notebook, sources)
        except NotebookError:
            return Added("")
        write_atomic(path, bom + total.text.encode("utf-8"), expected=data)
    return total
