"""The edits fixes are made of: find a spot (the canonical place in the update region, or
next to an anchor), then move, insert, remove, wrap or rewrite.

Rules decide what a fix does and call these; each returns edits in file coordinates, or
None when the edit cannot be made without guessing (see :mod:`gradlint.fixes.edits`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import libcst as cst

from gradlint.diagnostics import Edit
from gradlint.fixes import conditions, edits
from gradlint.fixes.layout import layout_of
from gradlint.fixes.regions import Region, Spot, after, before, boundary_region, canonical_spot, index_in
from gradlint.model.events import Event, Role, TrainingLoop

Edits = tuple[Edit, ...]
_ATOMS = (cst.Name, cst.Attribute, cst.Call, cst.Subscript, cst.Integer, cst.Float, cst.SimpleString)


def update_region(loop: TrainingLoop) -> Region | None:
    """The statements that run once per update (a gate's branch, after a micro-batch loop)."""
    return boundary_region(loop, layout_of(loop.unit))


def block_region(loop: TrainingLoop, event: Event) -> Region | None:
    """The whole block that holds ``event``'s statement."""
    statement = edits.movable(loop, event)
    block = layout_of(loop.unit).block_of(statement) if statement is not None else None
    return Region(block) if block is not None else None


def in_region(loop: TrainingLoop, region: Region, event: Event) -> bool:
    """Whether ``event`` runs in ``region``."""
    top = layout_of(loop.unit).top_statement(event.node, region.block)
    return top is not None and index_in(region.block, top) >= region.start


def guarded(event: Event) -> bool:
    """Whether an ``if`` (or a ``try``) lies between ``event`` and its innermost loop: a
    call that runs only when its own condition holds, which no single move keeps."""
    for node in reversed(event.ancestors):
        if isinstance(node, (cst.For, cst.While)):
            return False
        if isinstance(node, (cst.If, cst.Else, cst.Try, cst.ExceptHandler, cst.Finally)):
            return True
    return False


def canonical(loop: TrainingLoop, region: Region, role: Role, moved: Sequence[Event]) -> Spot:
    """Where work of ``role`` goes in ``region`` (unscale, clip, step, scaler update, then
    zero_grad and the scheduler), ignoring the ``moved`` events' current places."""
    return canonical_spot(loop, layout_of(loop.unit), region, role, moved)


def next_to(loop: TrainingLoop, anchor: Event, where: Literal["before", "after"],
            within: Event | None = None) -> Spot | None:
    """Just before or after the statement that holds ``anchor`` in the block of ``within``'s
    statement (default: ``anchor``'s own statement)."""
    layout = layout_of(loop.unit)
    statement = edits.movable(loop, within or anchor)
    block = layout.block_of(statement) if statement is not None else None
    top = layout.top_statement(anchor.node, block) if block is not None else None
    if block is None or top is None:
        return None
    return before(layout, top, block) if where == "before" else after(layout, top, block)


def move(loop: TrainingLoop, events: Sequence[Event], spot: Spot | None, new_lines: Sequence[str] = ()) -> Edits | None:
    """Move the statements of ``events`` (in order) to ``spot``, after the ``new_lines``; an
    ``if`` around a statement moves with it, and a move that would leave another condition
    or loop is not made (:func:`gradlint.fixes.conditions.carried`)."""
    if spot is None:
        return None
    statements: list[cst.CSTNode] = []
    for event in events:
        found = edits.movable(loop, event)
        statement = conditions.carried(loop, found, spot) if found is not None else None
        if statement is None:
            return None
        if not any(s is statement for s in statements):
            statements.append(statement)
    return edits.move_statements(loop, statements, spot, new_lines) or None


def twins(loop: TrainingLoop, region: Region, event: Event) -> list[Event]:
    """Calls of ``region`` that do ``event``'s work (same role, same receiver)."""
    return conditions.twins(loop, region, event)


def remove_duplicate(loop: TrainingLoop, region: Region, events: Sequence[Event]) -> Edits | None:
    """Delete the statements of ``events`` when ``region`` already makes each call, directly
    in its block, and each runs unconditionally where it stands (else None: a guarded call
    or a boundary call under its own condition is not the same work)."""
    layout = layout_of(loop.unit)
    statements: list[cst.CSTNode] = []
    for event in events:
        statement = edits.movable(loop, event)
        if statement is None or not conditions.duplicate(loop, region, event, statement):
            return None
        statements.append(statement)
    blocks = {id(layout.block_of(s)): layout.block_of(s) for s in statements}
    block = next(iter(blocks.values()), None)
    if len(blocks) != 1 or block is None or len(block.body) <= len(statements):
        return None  # the block must keep a statement
    found: list[Edit] = []
    for statement in statements:
        deleted = edits.delete_statement(loop, statement)
        if deleted is None:
            return None
        found.extend(deleted)
    return tuple(sorted(found, key=lambda e: e.span))


def guarded_code(loop: TrainingLoop, anchor: Event, spot: Spot | None, code: str) -> list[str] | None:
    """``code`` as lines for ``spot``, under the ``if`` tests that guard ``anchor`` there
    (``if scaler is not None:`` around an inserted ``scaler.unscale_(optimizer)``)."""
    return conditions.guard_lines(loop, anchor, spot, code) if spot is not None else None


def insert(loop: TrainingLoop, spot: Spot | None, code: str | Sequence[str]) -> Edits | None:
    """Insert the one-line statement ``code`` (or lines relative to the spot's indentation)
    at ``spot``."""
    if spot is None:
        return None
    lines = [code] if isinstance(code, str) else list(code)
    layout = layout_of(loop.unit)
    return (edits.insert_at(layout, spot, [spot.indent + line for line in lines]),)


def remove(loop: TrainingLoop, event: Event) -> Edits | None:
    """Delete the statement that carries ``event``."""
    statement = edits.movable(loop, event)
    return edits.delete_statement(loop, statement) if statement is not None else None


def wrap(loop: TrainingLoop, event: Event, header: str) -> Edits | None:
    """Put the statement that carries ``event`` under the compound ``header``."""
    statement = edits.movable(loop, event)
    return edits.wrap_statement(loop, statement, header) if statement is not None else None


def replace(loop: TrainingLoop, node: cst.CSTNode, content: str) -> Edits | None:
    """Replace the text of ``node`` with ``content``."""
    return edits.replace_node(loop, node, content)


def operand(loop: TrainingLoop, node: cst.BaseExpression) -> str:
    """Source text of ``node``, parenthesized unless it is atomic."""
    code = loop.unit.text_of(node).strip()
    if isinstance(node, _ATOMS) or (node.lpar and node.rpar):
        return code
    return f"({code})"


def divide(loop: TrainingLoop, expr: cst.BaseExpression, divisor: str) -> Edits | None:
    """Rewrite ``expr`` as ``expr / divisor``, parenthesized where it is a method's receiver
    (``(loss / N).backward()``); a parenthesized ``expr`` keeps its parentheses."""
    parent = layout_of(loop.unit).parent(expr)
    receiver = isinstance(parent, cst.Attribute) and parent.value is expr
    # the span of a parenthesized expression lies inside its parentheses, which stay
    divided = f"{operand(loop, expr.with_changes(lpar=(), rpar=()))} / {divisor}"
    return replace(loop, expr, f"({divided})" if receiver and not expr.lpar else divided)


def undivide(loop: TrainingLoop, divisor: cst.BaseExpression) -> Edits | None:
    """Drop the division by ``divisor``: ``loss = loss / N`` and ``loss /= N`` go, ``x / N``
    becomes ``x``."""
    layout = layout_of(loop.unit)
    parent = layout.parent(divisor)
    if isinstance(parent, cst.AugAssign) and isinstance(parent.operator, cst.DivideAssign):
        return _delete_simple(loop, parent)
    if not (isinstance(parent, cst.BinaryOperation) and isinstance(parent.operator, cst.Divide)
            and parent.right is divisor):
        return None
    left = loop.unit.text_of(parent.left).strip()
    assign = layout.parent(parent)
    if isinstance(assign, cst.Assign) and len(assign.targets) == 1 and assign.value is parent \
            and loop.unit.text_of(assign.targets[0].target).strip() == left:
        return _delete_simple(loop, assign)
    return replace(loop, parent, left)


def _delete_simple(loop: TrainingLoop, small: cst.CSTNode) -> Edits | None:
    """Delete the line of ``small`` when it is that line's only statement."""
    statement = layout_of(loop.unit).parent(small)
    if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
        return None
    return edits.delete_statement(loop, statement)
