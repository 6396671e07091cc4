"""Where statements sit in a unit's file lines: parents, blocks, extents and indentation.

Fix builders work in whole lines of the file: a statement occupies the lines from its
first comment line above (at its own indentation) to its last line, trailing comment
included. The layout is derived from the unit's libcst module, whose lines are exactly the
file's lines of that unit (a nested unit is parsed under an ``if 1:`` header).
"""

from __future__ import annotations

import re
import weakref
from functools import lru_cache
from weakref import WeakKeyDictionary

import libcst as cst

from gradlint.model.unit import UnitModel
from gradlint.source import python_lines

_LAYOUTS: WeakKeyDictionary[UnitModel, Layout] = WeakKeyDictionary()
_LONE_CR = re.compile(r"\r(?!\n)")


class _Parents(cst.CSTVisitor):
    def __init__(self) -> None:
        self.parents: dict[cst.CSTNode, cst.CSTNode] = {}
        self._stack: list[cst.CSTNode] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        if self._stack:
            self.parents[node] = self._stack[-1]
        self._stack.append(node)
        return True

    def on_leave(self, original_node: cst.CSTNode) -> None:
        self._stack.pop()


class Layout:
    """Lines, parents and statement extents of one unit, in file coordinates."""

    def __init__(self, unit: UnitModel) -> None:
        # a weak reference: the cache's value must not keep its key (the unit) alive
        self._unit = weakref.ref(unit)
        self._parents, self._lines = _module_layout(unit.module)
        first = self._lines[1] if unit.unit.indent > 0 and len(self._lines) > 1 else self._lines[0]
        self.newline = "\r\n" if first.endswith("\r") else "\n"
        # a lone carriage return ends a line for Python but not for file lines split on "\n"
        # and a unit whose text was changed for libcst (form feeds) is not the file's
        self.sound = _LONE_CR.search(unit.module.code) is None and not unit.column_shifts

    @property
    def unit(self) -> UnitModel:
        """The unit laid out (alive as long as the caller holds it)."""
        unit = self._unit()
        if unit is None:
            raise ReferenceError("the unit of this layout is gone")
        return unit

    def parent(self, node: cst.CSTNode) -> cst.CSTNode | None:
        """The node that directly holds ``node``."""
        return self._parents.get(node)

    def has_line(self, line: int) -> bool:
        """Whether file line ``line`` belongs to this unit."""
        index = line - self.unit.line_offset - 1
        header = 1 if self.unit.unit.indent > 0 else 0
        return header <= index < len(self._lines) - 1

    def line(self, line: int) -> str:
        """File line ``line`` without its line ending."""
        return self._lines[line - self.unit.line_offset - 1].rstrip("\r")

    def indent(self, line: int) -> str:
        """The leading whitespace of file line ``line``."""
        text = self.line(line)
        return text[: len(text) - len(text.lstrip(" \t"))]

    def block_of(self, statement: cst.CSTNode) -> cst.IndentedBlock | None:
        """The indented block ``statement`` is a direct child of, if any."""
        parent = self.parent(statement)
        return parent if isinstance(parent, cst.IndentedBlock) else None

    def owner(self, block: cst.CSTNode) -> cst.CSTNode | None:
        """The compound statement (or ``else``) whose body ``block`` is."""
        return self.parent(block)

    def top_statement(self, node: cst.CSTNode, block: cst.IndentedBlock) -> cst.CSTNode | None:
        """The direct child of ``block`` that holds ``node`` (or None if outside it)."""
        current: cst.CSTNode | None = node
        while current is not None:
            parent = self.parent(current)
            if parent is block:
                return current
            current = parent
        return None

    def extent(self, statement: cst.CSTNode) -> tuple[int, int]:
        """First and last file line of ``statement``, its comment lines above included."""
        span = self.unit.span(statement)
        first, indent = span.line, self.indent(span.line)
        while self.has_line(first - 1):
            above = self.line(first - 1)
            if not above.strip().startswith("#") or self.indent(first - 1) != indent:
                break
            first -= 1
        return first, span.end_line

    def text(self, first: int, last: int) -> list[str]:
        """File lines ``first`` to ``last`` without line endings."""
        return [self.line(n) for n in range(first, last + 1)]


@lru_cache(maxsize=64)
def _module_layout(module: cst.Module) -> tuple[dict[cst.CSTNode, cst.CSTNode], list[str]]:
    """The parents of a unit module's nodes and its lines without endings, numbered as Python
    numbers lines, like the positions (a lone "\\r" ends a line too). Modules are shared by
    the units parsed from the same text (:mod:`gradlint.model.unit`), so a re-lint derives
    nothing again; the cache is bounded like the parse cache."""
    visitor = _Parents()
    module.visit(visitor)
    return visitor.parents, [line.removesuffix("\n") for line in python_lines(module.code)]


def layout_of(unit: UnitModel) -> Layout:
    """The (cached) layout of ``unit``."""
    found = _LAYOUTS.get(unit)
    if found is None:
        found = _LAYOUTS[unit] = Layout(unit)
    return found
