"""Text edits over whole statements: move, insert, wrap, replace an expression.

Every builder returns edits in file coordinates, or None when the rewrite cannot be done
without guessing (a statement shared with others on one line, a block that would be left
empty, a name read before its new definition, a multi-line string that re-indenting would
change). Inserted text uses the file's own newline and the indentation found at the target.
"""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst

from gradlint.diagnostics import Edit, Span
from gradlint.fixes.layout import Layout, layout_of
from gradlint.fixes.regions import Spot
from gradlint.model.events import Event, TrainingLoop

_WRAPPERS = (cst.If, cst.For, cst.While, cst.With)


def movable(loop: TrainingLoop, event: Event) -> cst.CSTNode | None:
    """The statement that carries ``event`` alone: its own line (or the compound statement
    that is the event, like a ``for p in params: p.grad = None`` loop), or the smallest
    compound statement around it that holds nothing else (``if args.clip: clip(...)``).
    None when the call shares its statement with other code."""
    layout = layout_of(loop.unit)
    if not layout.sound:
        return None
    statement = event.statement
    whole = isinstance(statement, cst.BaseCompoundStatement) and event.node is statement
    if not whole and (not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1):
        return None
    block = layout.block_of(statement)
    if block is None:
        return None
    stops = {id(loop.root), *(id(g.node) for g in loop.gates), *(id(m) for m in loop.micro_loops),
             *(id(b) for b in loop.accumulate_blocks)}
    while len(block.body) == 1:
        owner = layout.owner(block)
        if not isinstance(owner, _WRAPPERS) or id(owner) in stops or getattr(owner, "orelse", None):
            break
        if any(e.inside(owner) and not e.inside(statement) and e.node is not statement for e in loop.events
               if e is not event):
            break
        outer = layout.block_of(owner)
        if outer is None:
            break
        statement, block = owner, outer
    return statement


def move_statements(
    loop: TrainingLoop, statements: Sequence[cst.CSTNode], spot: Spot, new_lines: Sequence[str] = ()
) -> tuple[Edit, ...] | None:
    """Delete ``statements`` (direct children of indented blocks, with their comment lines)
    and insert ``new_lines`` plus their text, re-indented, at ``spot``."""
    layout = layout_of(loop.unit)
    ranges = sorted(((*layout.extent(s), s) for s in statements), key=lambda r: r[0])
    for first, last, statement in ranges:
        if first < spot.line <= last:
            return None  # into itself
        if spot.line in (first, last + 1) and layout.block_of(statement) is spot.block:
            return None  # the statement would land where it already is
    if not _blocks_keep_a_statement(layout, statements, spot) or not _names_stay_defined(loop, statements, spot):
        return None
    lines = [spot.indent + line for line in new_lines]
    for first, last, statement in ranges:
        old = layout.indent(layout.unit.span(statement).line)
        moved = _reindent(layout.text(first, last), old, spot.indent)
        if moved is None or (old != spot.indent and _has_multiline_string(statement)):
            return None
        lines.extend(moved)
    edits = [Edit(Span(first, 1, last + 1, 1), "") for first, last in _merge((start, end) for start, end, _ in ranges)]
    edits.append(insert_at(layout, spot, lines))
    return tuple(sorted(edits, key=lambda e: e.span))


def insert_at(layout: Layout, spot: Spot, lines: Sequence[str]) -> Edit:
    """An edit inserting whole ``lines`` (already indented) before ``spot.line``."""
    text = "".join(line + layout.newline for line in lines)
    return Edit(Span(spot.line, 1, spot.line, 1), text)


def wrap_statement(loop: TrainingLoop, statement: cst.CSTNode, header: str) -> tuple[Edit, ...] | None:
    """Put ``statement`` under a new compound ``header`` (``if accelerator.sync_gradients:``)."""
    layout = layout_of(loop.unit)
    span = loop.unit.span(statement)
    block = layout.block_of(statement)
    owner = layout.owner(block) if block is not None else None
    if owner is None or _has_multiline_string(statement):
        return None
    indent = layout.indent(span.line)
    outer = layout.indent(loop.unit.span(owner).line)
    unit = indent[len(outer):] if indent.startswith(outer) and len(indent) > len(outer) else "    "
    first, last = layout.extent(statement)
    comments = layout.text(first, span.line - 1)
    body = _reindent(layout.text(span.line, last), indent, indent + unit)
    if body is None:
        return None
    text = "".join(line + layout.newline for line in [*comments, indent + header, *body])
    return (Edit(Span(first, 1, last + 1, 1), text),)


def replace_node(loop: TrainingLoop, node: cst.CSTNode, content: str) -> tuple[Edit, ...] | None:
    """Replace the exact text of ``node`` (None for a node of another unit, such as a
    helper function the loop calls)."""
    if node not in loop.unit.positions or not layout_of(loop.unit).sound:
        return None
    return (Edit(loop.unit.span(node), content),)


def delete_statement(loop: TrainingLoop, statement: cst.CSTNode) -> tuple[Edit, ...] | None:
    """Delete ``statement`` (with its comment lines) unless it is alone in its block."""
    layout = layout_of(loop.unit)
    block = layout.block_of(statement)
    if block is None or len(block.body) < 2 or not layout.sound:
        return None
    first, last = layout.extent(statement)
    return (Edit(Span(first, 1, last + 1, 1), ""),)


def _reindent(lines: list[str], old: str, new: str) -> list[str] | None:
    if old == new:
        return lines
    out = []
    for line in lines:
        if not line.strip():
            out.append("")
        elif line.startswith(old):
            out.append(new + line[len(old):])
        else:
            return None  # a continuation line left of the statement: leave it be
    return out


def _merge(ranges) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for first, last in ranges:
        if merged and first == merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], last)
        else:
            merged.append((first, last))
    return merged


def _blocks_keep_a_statement(layout: Layout, statements: Sequence[cst.CSTNode], spot: Spot) -> bool:
    """A block emptied by the move would not parse."""
    leaving: dict[int, tuple[cst.IndentedBlock, int]] = {}
    for statement in statements:
        block = layout.block_of(statement)
        if block is None:
            return False
        _, count = leaving.get(id(block), (block, 0))
        leaving[id(block)] = (block, count + 1)
    return all(len(block.body) > count or block is spot.block for block, count in leaving.values())


def _names_stay_defined(loop: TrainingLoop, statements: Sequence[cst.CSTNode], spot: Spot) -> bool:
    """Names a moved statement binds may be read only after it in the target block."""
    bound = set()
    for statement in statements:
        if isinstance(statement, cst.SimpleStatementLine):
            bound |= _assigned_names(statement.body[0])
    if not bound:
        return True
    unit = loop.unit
    block_span = unit.span(spot.block)
    inside = [unit.span(s) for s in statements]
    reads: list[cst.Name] = []

    class _Reads(cst.CSTVisitor):
        def visit_Name(self, node: cst.Name) -> None:
            if node.value in bound:
                reads.append(node)

    loop.root.visit(_Reads())
    for name in reads:
        at = unit.span(name)
        if any(s.line <= at.line <= s.end_line for s in inside):
            continue
        if not (spot.line <= at.line <= block_span.end_line):
            return False
    return True


def _assigned_names(small: cst.BaseSmallStatement) -> set[str]:
    targets: list[cst.BaseExpression] = []
    if isinstance(small, cst.Assign):
        targets = [t.target for t in small.targets]
    elif isinstance(small, (cst.AnnAssign, cst.AugAssign)):
        targets = [small.target]
    names: set[str] = set()
    for target in targets:
        if isinstance(target, cst.Name):
            names.add(target.value)
        elif isinstance(target, (cst.Tuple, cst.List)):
            names |= {e.value.value for e in target.elements if isinstance(e.value, cst.Name)}
    return names


def _has_multiline_string(statement: cst.CSTNode) -> bool:
    found = []

    class _Strings(cst.CSTVisitor):
        def visit_SimpleString(self, node: cst.SimpleString) -> None:
            found.append("\n" in node.value)

        def visit_FormattedString(self, node: cst.FormattedString) -> None:
            found.append(node.start.endswith(('"""', "'''")))

    statement.visit(_Strings())
    return any(found)
