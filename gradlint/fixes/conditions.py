"""What a fix must keep: the conditions and loops a training call runs under.

A statement moved to the update boundary leaves the micro-batch body (the loop itself, or an
inner micro-batch loop) and nothing else: an ``if`` it sat in moves with it (the guard and
the statements that prepare the call) or there is no fix; an ``else`` branch, a ``try``, a
``with`` or another loop (``for opt in optimizers:``) it would leave means no fix. A call
is a duplicate of a boundary call only when both run unconditionally where they stand, and
a call inserted next to a guarded use of the scaler gets the same guard.
"""

from __future__ import annotations

import libcst as cst

from gradlint.fixes.layout import Layout, layout_of
from gradlint.fixes.regions import Region, Spot
from gradlint.model.events import Event, Role, TrainingLoop
from gradlint.model.syntax import names_in

_LEAVE = (cst.Break, cst.Continue, cst.Return, cst.Raise)


def _stops(loop: TrainingLoop) -> set[int]:
    """The nodes whose body is a place of the loop (its root, gates, micro-batch loops,
    ``accumulate()`` blocks): a statement directly in one runs unconditionally there."""
    return {id(loop.root), *(id(g.node) for g in loop.gates), *(id(m) for m in loop.micro_loops),
            *(id(b) for b in loop.accumulate_blocks)}


def unconditional(loop: TrainingLoop, statement: cst.CSTNode) -> bool:
    """Whether ``statement`` stands directly in the body of the loop, a micro-batch loop, an
    ``accumulate()`` block or a gate's update branch (no condition or loop of its own)."""
    layout = layout_of(loop.unit)
    block = layout.block_of(statement)
    owner = layout.owner(block) if block is not None else None
    return owner is not None and id(owner) in _stops(loop)


def _same_call(first: Event, second: Event) -> bool:
    """Two calls that do the same work: the same code (for ``zero_grad``, the same callee:
    ``set_to_none`` changes nothing the update reads)."""
    a, b = first.node, second.node
    if first.role is Role.ZERO_GRAD and isinstance(a, cst.Call) and isinstance(b, cst.Call):
        return a.func.deep_equals(b.func)
    return a.deep_equals(b)


def twins(loop: TrainingLoop, region: Region, event: Event) -> list[Event]:
    """Calls in ``region`` with ``event``'s role on the same receiver (any clip for a clip:
    gradients are clipped once per update), ``event`` excluded."""
    layout = layout_of(loop.unit)
    found = []
    for other in loop.of(event.role):
        if other is event or (other.receiver != event.receiver and event.role is not Role.CLIP):
            continue
        top = layout.top_statement(other.node, region.block)
        if top is not None and next(i for i, s in enumerate(region.block.body) if s is top) >= region.start:
            found.append(other)
    return found


def duplicate(loop: TrainingLoop, region: Region, event: Event, statement: cst.CSTNode) -> bool:
    """Whether ``event`` (carried by ``statement``) may simply be deleted because ``region``
    already does the same: the boundary call stands directly in the region's block, it is
    the only such call there, and ``event`` itself runs unconditionally where it stands."""
    layout = layout_of(loop.unit)
    found = twins(loop, region, event)
    return (len(found) == 1 and layout.block_of(found[0].statement) is region.block
            and found[0].statement is not statement and _same_call(found[0], event)
            and statement is event.statement and unconditional(loop, statement))


def carried(loop: TrainingLoop, statement: cst.CSTNode, spot: Spot) -> cst.CSTNode | None:
    """What to move so that ``statement`` runs under the same conditions at ``spot``: the
    statement, or the ``if`` (without ``else``) around it that moves with it; None when the
    move would leave an ``else`` branch, a ``try``, a ``with`` or a loop that is not the
    loop's own micro-batch loop."""
    layout = layout_of(loop.unit)
    target = _ancestry(layout, spot.block)
    passable = {id(loop.root), *(id(m) for m in loop.micro_loops)}
    moved = statement
    node = layout.parent(statement)
    while node is not None and id(node) not in target:
        if isinstance(node, cst.IndentedBlock):
            pass
        elif id(node) in passable:
            pass  # leaving the micro-batch body for the boundary: the move itself
        elif isinstance(node, cst.If):
            if not _carriable(loop, layout, node, moved, spot):
                return None
            moved = node
        else:
            return None
        node = layout.parent(node)
    return moved


def _ancestry(layout: Layout, node: cst.CSTNode) -> set[int]:
    found = set()
    current: cst.CSTNode | None = node
    while current is not None:
        found.add(id(current))
        current = layout.parent(current)
    return found


def _carriable(loop: TrainingLoop, layout: Layout, guard: cst.If, inner: cst.CSTNode, spot: Spot) -> bool:
    """An ``if`` can move with the call it guards when it has no ``else``, holds no other
    training call and no jump out, stands directly in a block, binds nothing read outside
    it, and reads nothing the loop assigns between its old place and the new one."""
    if guard.orelse is not None or layout.block_of(guard) is None or _leaves(guard):
        return False
    if any(e.inside(guard) and not (e.node is inner or e.statement is inner or e.inside(inner)) for e in loop.events):
        return False
    unit = loop.unit
    span = unit.span(guard)
    bound = _bound_names(guard)
    if bound and any(not (span.line <= line <= span.end_line) for line in _read_lines(loop, bound)):
        return False
    low, high = sorted((span.line, spot.line))
    for name in names_in(guard):
        for line, _ in unit.assignments.get(name, []):
            if low <= line <= high and not (span.line <= line <= span.end_line):
                return False
    return True


def _leaves(node: cst.CSTNode) -> bool:
    found: list[cst.CSTNode] = []

    class _Jumps(cst.CSTVisitor):
        def on_visit(self, n: cst.CSTNode) -> bool:
            if isinstance(n, _LEAVE):
                found.append(n)
            return not isinstance(n, (cst.FunctionDef, cst.Lambda, cst.ClassDef))

    node.visit(_Jumps())
    return bool(found)


def _bound_names(node: cst.CSTNode) -> set[str]:
    """Names assigned anywhere in ``node`` (plain names: targets, ``for`` targets, ``as``)."""
    names: set[str] = set()

    class _Targets(cst.CSTVisitor):
        def visit_AssignTarget(self, n: cst.AssignTarget) -> None:
            names.update(_plain(n.target))

        def visit_AnnAssign(self, n: cst.AnnAssign) -> None:
            names.update(_plain(n.target))

        def visit_AugAssign(self, n: cst.AugAssign) -> None:
            names.update(_plain(n.target))

        def visit_For(self, n: cst.For) -> None:
            names.update(_plain(n.target))

        def visit_AsName(self, n: cst.AsName) -> None:
            names.update(_plain(n.name))

        def visit_NamedExpr(self, n: cst.NamedExpr) -> None:
            names.update(_plain(n.target))

    node.visit(_Targets())
    return names


def _plain(target: cst.CSTNode) -> set[str]:
    if isinstance(target, cst.Name):
        return {target.value}
    if isinstance(target, (cst.Tuple, cst.List)):
        return {n for e in target.elements for n in _plain(e.value)}
    return set()


def _read_lines(loop: TrainingLoop, names: set[str]) -> list[int]:
    """File lines of the loop where one of ``names`` appears."""
    lines: list[int] = []
    unit = loop.unit

    class _Reads(cst.CSTVisitor):
        def visit_Name(self, n: cst.Name) -> None:
            if n.value in names and n in unit.positions:
                lines.append(unit.span(n).line)

    loop.root.visit(_Reads())
    return lines


def guard_lines(loop: TrainingLoop, anchor: Event, spot: Spot, code: str) -> list[str] | None:
    """``code`` as lines to insert at ``spot`` (relative to its indentation), under the
    ``if`` tests that guard ``anchor`` (the scaler's step) and do not hold ``spot``:
    ``if scaler is not None:`` then the call. None when ``anchor`` runs in an ``else``
    branch or under a test that does not fit on one line."""
    layout = layout_of(loop.unit)
    target = _ancestry(layout, spot.block)
    headers: list[str] = []
    for node in anchor.ancestors:
        if not isinstance(node, cst.If) or id(node) in target or any(g.node is node for g in loop.gates):
            continue
        if not anchor.inside(node.body):
            return None
        test = loop.unit.text_of(node.test).strip()
        if "\n" in test:
            return None
        headers.append(f"if {test}:")
    step = _indent_step(layout, spot)
    lines = [(step * depth) + header for depth, header in enumerate(headers)]
    return [*lines, step * len(headers) + code]


def _indent_step(layout: Layout, spot: Spot) -> str:
    """One level of the file's indentation, as the spot's block indents from its header."""
    owner = layout.owner(spot.block)
    outer = layout.indent(layout.unit.span(owner).line) if owner is not None else ""
    step = spot.indent[len(outer):] if spot.indent.startswith(outer) else ""
    return step or "    "
