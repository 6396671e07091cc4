"""Jupyter notebooks: lint the code cells as one module, report and fix per cell.

The code cells are joined in order, each introduced by a marker comment line, so the
analysis sees one module (imports in an early cell resolve names in later ones) and fixed
text can be split back into its cells. IPython syntax is masked with a placeholder
statement of the same indentation: line magics (``%time``), shell escapes (``!pip``,
``x = !ls``), help (``obj?``) and the first line of a Python cell magic (``%%time``);
cells of other cell magics (``%%bash``) are masked whole. Positions are reported as
(cell, line in cell, column), cells numbered from 1 over all cells as Jupyter shows them.
Writing back replaces only the text of the ``source`` values of fixed cells
(:mod:`gradlint.notebook_json`), so the rest stays byte for byte the same.
"""

from __future__ import annotations

import io
import json
import re
import tokenize
from dataclasses import dataclass, replace
from typing import Any

from gradlint.catalogue import SYNTAX_ERROR
from gradlint.diagnostics import Diagnostic, Edit, Fix, Span
from gradlint.notebook_json import indent_unit, source_text, source_values
from gradlint.settings import Settings

_MARKER = "# <gradlint cell {}>"
_MARKER_LINE = re.compile(r"^# <gradlint cell (\d+)>$")
_PLACEHOLDER = "pass  # <gradlint magic {}>"
_PLACEHOLDER_LINE = re.compile(r"^(\s*)pass  # <gradlint magic (\d+)>$")
_MAGIC = re.compile(r"^\s*(?:[%!?]|[\w.]+\s*=\s*[%!])|^\s*[\w.]+\?\??\s*$")
_PYTHON_CELL_MAGICS = frozenset({"time", "timeit", "capture", "prun", "debug", "python", "python3"})


class NotebookError(ValueError):
    """The file is not a notebook gradlint can read."""


@dataclass(frozen=True)
class Cell:
    """One code cell: its number, its text, and its text with IPython syntax masked."""

    number: int
    text: str
    masked: str
    magics: tuple[str, ...]  # original lines of the placeholders numbered from ``first_magic``
    first_magic: int


@dataclass
class Notebook:
    """A parsed notebook, its code cells, and the module text the linter sees."""

    document: dict[str, Any]
    raw: str
    cells: list[Cell]
    text: str  # the joined, masked code cells with marker lines
    lines: list[tuple[int, int]]  # joined line (0-based) -> (cell number, line in cell; 0 = marker)

    def cell(self, number: int) -> Cell | None:
        """The code cell numbered ``number``."""
        return next((c for c in self.cells if c.number == number), None)


def _source(cell: dict[str, Any], number: int) -> str:
    """A code cell's text: its ``source``, a string or a list of strings."""
    source = cell.get("source", "")
    if isinstance(source, list) and all(isinstance(part, str) for part in source):
        return "".join(source)
    if isinstance(source, str):
        return source
    raise NotebookError(f"not a notebook: the source of cell {number} is not text")


def _mask(text: str, first_magic: int) -> tuple[str, tuple[str, ...]]:
    lines = text.split("\n")
    magics: list[str] = []

    def placeholder(line: str) -> str:
        magics.append(line)
        indent = line[: len(line) - len(line.lstrip())]
        return indent + _PLACEHOLDER.format(first_magic + len(magics) - 1)

    head = lines[0].strip() if lines else ""
    whole_cell = head.startswith("%%") and head[2:].split(" ")[0] not in _PYTHON_CELL_MAGICS
    masked: list[str] = []
    continued = False
    for index, line in enumerate(lines):
        if whole_cell and line.strip():
            masked.append(placeholder(line))
        elif continued or (index == 0 and head.startswith("%%")) or (_MAGIC.match(line) and not _open(masked)):
            masked.append(placeholder(line))
            continued = line.rstrip().endswith("\\")
        else:
            masked.append(line)
    return "\n".join(masked), tuple(magics)


def _open(lines: list[str]) -> bool:
    """Whether ``lines`` end inside a bracket, a string or a backslash continuation, where a
    line starting with ``%`` or ``!`` is an operator, not IPython syntax."""
    try:
        for _ in tokenize.generate_tokens(io.StringIO("\n".join(lines) + "\n").readline):
            pass
    except tokenize.TokenError:
        return True
    except (SyntaxError, ValueError):
        return False
    return False


def _is_python(document: dict[str, Any]) -> bool:
    metadata = _table(document.get("metadata"))
    language = _table(metadata.get("language_info")).get("name") or _table(metadata.get("kernelspec")).get("language")
    return language is None or str(language).lower() == "python"


def _table(value: Any) -> dict[str, Any]:
    """``value`` if it is a JSON object, else an empty one (a malformed entry says nothing)."""
    return value if isinstance(value, dict) else {}


def read_notebook(raw: str) -> Notebook:
    """Parse notebook JSON text; raises :class:`NotebookError` when it is not a notebook."""
    try:
        document = json.loads(raw)
    except (json.JSONDecodeError, RecursionError) as exc:
        raise NotebookError(f"not a notebook: invalid JSON: {exc}") from None
    if not isinstance(document, dict) or not isinstance(document.get("cells"), list):
        raise NotebookError("not a notebook: no 'cells' list")
    cells: list[Cell] = []
    magic_count = 0
    if _is_python(document):
        for number, cell in enumerate(document["cells"], start=1):
            if isinstance(cell, dict) and cell.get("cell_type") == "code":
                text = _source(cell, number)
                masked, magics = _mask(text, magic_count)
                cells.append(Cell(number, text, masked, magics, magic_count))
                magic_count += len(magics)
    joined: list[str] = []
    lines: list[tuple[int, int]] = []
    for cell in cells:
        joined.append(_MARKER.format(cell.number) + "\n")
        lines.append((cell.number, 0))
        for index, line in enumerate(_body(cell.masked), start=1):
            joined.append(line + "\n")
            lines.append((cell.number, index))
    return Notebook(document, raw, cells, "".join(joined), lines)


def cell_text(raw: str, number: int) -> str | None:
    """The text of code cell ``number`` of notebook JSON ``raw`` (None if there is none)."""
    try:
        cell = read_notebook(raw).cell(number)
    except NotebookError:
        return None
    return cell.text if cell else None


def _position(notebook: Notebook, line: int, column: int) -> tuple[int, int, int] | None:
    """(cell, line, column) of a 1-based joined position; the end of a cell's last line may be
    given as column 1 of the next line."""
    if 1 <= line <= len(notebook.lines):
        cell, in_cell = notebook.lines[line - 1]
        if in_cell:
            return cell, in_cell, column
        if column == 1 and line > 1:  # a marker line: the end of the cell before it
            before, last = notebook.lines[line - 2]
            return before, last + 1, 1
    if column == 1 and line == len(notebook.lines) + 1 and notebook.lines:
        before, last = notebook.lines[-1]
        return before, last + 1, 1
    return None


def _span(notebook: Notebook, span: Span, cell: int) -> Span | None:
    start = _position(notebook, span.line, span.column)
    end = _position(notebook, span.end_line, span.end_column)
    if start is None or end is None or start[0] != cell or end[0] != cell:
        return None
    return Span(start[1], start[2], end[1], end[2])


def to_cells(notebook: Notebook, diagnostics: list[Diagnostic]) -> list[Diagnostic]:
    """Diagnostics of the joined text, re-addressed to (cell, line, column).

    A fix that would reach outside its cell is dropped (the finding stays).
    """
    mapped: list[Diagnostic] = []
    for diagnostic in diagnostics:
        start = _position(notebook, diagnostic.line, diagnostic.column)
        if start is None:
            mapped.append(replace(diagnostic, span=Span(1, 1, 1, 1)))
            continue
        cell = start[0]
        span = _span(notebook, diagnostic.span, cell) or Span(start[1], start[2], start[1], start[2])
        fix = diagnostic.fix
        if fix is not None:
            spans = [_span(notebook, e.span, cell) for e in fix.edits]
            kept = [Edit(s, e.content) for s, e in zip(spans, fix.edits, strict=True) if s is not None]
            fix = Fix(fix.applicability, fix.message, tuple(kept)) if len(kept) == len(spans) else None
        mapped.append(replace(diagnostic, span=span, fix=fix, cell=cell))
    return sorted(mapped, key=Diagnostic.sort_key)


def lint_notebook(raw: bytes, path: str, settings: Settings) -> list[Diagnostic]:
    """All diagnostics of a notebook file's bytes, by cell; an unreadable notebook is a GL000.

    The caller has found the bytes :func:`gradlint.prefilter.worth_reading` (the runner does).
    """
    from gradlint.engine import lint_source  # on use: reading cells (reports) needs no libcst

    try:
        notebook = read_notebook(raw.decode("utf-8-sig"))
    except (UnicodeDecodeError, NotebookError) as exc:
        if not settings.enabled(SYNTAX_ERROR.code):
            return []
        message = f"not a notebook: {exc.reason}" if isinstance(exc, UnicodeDecodeError) else str(exc)
        return [Diagnostic(path, Span(1, 1, 1, 1), SYNTAX_ERROR.code, SYNTAX_ERROR.name,
                           SYNTAX_ERROR.severity, message)]
    return to_cells(notebook, lint_source(notebook.text, path, settings))


def _body(text: str) -> list[str]:
    """Lines of a cell as the joined text holds them (a final line ending adds no line)."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return lines


def split_cells(notebook: Notebook, text: str) -> dict[int, list[str]] | None:
    """The masked lines of each cell in ``text`` (joined like :attr:`Notebook.text`), or None
    when the markers are not all there, once each and in order."""
    found: dict[int, list[str]] = {}
    current: list[str] | None = None
    order: list[int] = []
    for line in _body(text):
        marker = _MARKER_LINE.match(line.rstrip("\r"))
        if marker:
            current = found.setdefault(int(marker.group(1)), [])
            order.append(int(marker.group(1)))
        elif current is not None:
            current.append(line)
        elif line.strip():
            return None
    if order != [cell.number for cell in notebook.cells]:
        return None
    return found


def _unmask(cell: Cell, lines: list[str]) -> list[str]:
    def restore(line: str) -> str:
        match = _PLACEHOLDER_LINE.match(line)
        index = int(match.group(2)) - cell.first_magic if match else -1
        if match is None or not 0 <= index < len(cell.magics):
            return line
        return match.group(1) + cell.magics[index].lstrip()

    return [restore(line) for line in lines]


def cell_texts(notebook: Notebook, joined: str) -> dict[int, str] | None:
    """The new source of every cell whose text differs in ``joined`` (IPython syntax restored,
    the cell's final line ending or its absence kept); None when the cells cannot be told apart."""
    split = split_cells(notebook, joined)
    if split is None:
        return None
    changed: dict[int, str] = {}
    for cell in notebook.cells:
        lines = split[cell.number]
        if lines == _body(cell.masked):
            continue
        text = "\n".join(_unmask(cell, lines))
        changed[cell.number] = text + "\n" if cell.text.endswith("\n") and lines else text
    return changed


def write_cells(notebook: Notebook, sources: dict[int, str]) -> str:
    """The notebook JSON with the ``source`` of the given cells replaced: only the text of
    those values changes, the rest of the file stays byte for byte the same."""
    raw = notebook.raw
    values = source_values(raw)
    unit = indent_unit(raw)
    pieces: list[str] = []
    at = 0
    for number in sorted(sources):
        value = values.get(number)
        if value is None:
            raise NotebookError(f"cell {number} has no source to rewrite")
        pieces += [raw[at:value.start], source_text(raw, value, sources[number], unit)]
        at = value.end
    pieces.append(raw[at:])
    return "".join(pieces)


@dataclass
class NotebookFix:
    """Fixing a notebook's text: the new JSON text, what was fixed and what remains (by cell)."""

    text: str
    fixed: list[Diagnostic]
    remaining: list[Diagnostic]
    error: str | None = None


def fix_notebook(raw: str, path: str, settings: Settings, unsafe: bool = False) -> NotebookFix:
    """Apply fixes to the code cells of notebook JSON ``raw``; other cells, outputs and
    metadata keep their text. Raises :class:`NotebookError` when ``raw`` is not a notebook.

    Fixed diagnostics are addressed in the original cells (later passes approximately).
    """
    from gradlint.engine import lint_source
    from gradlint.fixer import fix_source

    notebook = read_notebook(raw)
    result = fix_source(notebook.text, path, settings, unsafe)
    changed = cell_texts(notebook, result.text)
    if changed is None:
        remaining = to_cells(notebook, lint_source(notebook.text, path, settings))
        return NotebookFix(raw, [], remaining, "the fixes would move code across cells")
    if not changed:
        return NotebookFix(raw, [], to_cells(notebook, result.remaining))
    new = write_cells(notebook, changed)
    fixed_notebook = read_notebook(new)
    remaining = to_cells(fixed_notebook, lint_source(fixed_notebook.text, path, settings))
    return NotebookFix(new, to_cells(notebook, result.fixed), remaining)
