"""Where update work belongs: the boundary region of a loop and a spot inside it.

A *region* is a run of statements of one indented block that executes once per update: the
body of the step gate, the statements after an ``if not <gate>: continue`` guard, or the
statements after an inner micro-batch loop. A *spot* is an insertion point (before a file
line) with the indentation of the statements around it. Inside a region, update work is
placed in the canonical order: unscale, clip, step, scaler update, then zero_grad and the
scheduler (each just after the step).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import libcst as cst

from gradlint.fixes.layout import Layout
from gradlint.model.events import Event, Role, Shape, TrainingLoop
from gradlint.model.loss import scales_gradients

RANK = {
    Role.UNSCALE: 0,
    Role.CLIP: 1,
    Role.STEP: 2,
    Role.SCALER_UPDATE: 3,
    Role.ZERO_GRAD: 4,
    Role.SCHEDULER_STEP: 4,  # both go right after the step, neither before the other
}


@dataclass(frozen=True)
class Region:
    """Statements ``block.body[start:]`` run once per optimizer update."""

    block: cst.IndentedBlock
    start: int = 0


@dataclass(frozen=True)
class Spot:
    """Insert before file line ``line`` (column 1), indented like its neighbours."""

    line: int
    indent: str
    block: cst.IndentedBlock


def index_in(block: cst.IndentedBlock, statement: cst.CSTNode) -> int:
    """Position of ``statement`` among the direct children of ``block``."""
    return next(i for i, s in enumerate(block.body) if s is statement)


def boundary_region(loop: TrainingLoop, layout: Layout) -> Region | None:
    """The region that runs once per update in a gated or nested loop, if one is targetable."""
    if loop.shape is Shape.GATED:
        gate = loop.primary_gate
        if gate is None:
            return None
        block = gate.update_branch
        if block is not None and block not in loop.unit.positions:
            return None  # the gate is in a helper function the loop calls
        if not isinstance(block, cst.IndentedBlock):
            return None  # a one-line `if gate: step()` has no block to move into
        if gate.guard:
            top = layout.top_statement(gate.node, block)
            return Region(block, index_in(block, top) + 1) if top is not None else None
        return Region(block)
    if loop.shape is Shape.NESTED and len(loop.micro_loops) == 1:
        micro = loop.micro_loops[0]
        block = layout.block_of(micro) if micro in loop.unit.positions else None
        return Region(block, index_in(block, micro) + 1) if block is not None else None
    return None


def region_of(layout: Layout, region: Region, event: Event) -> int | None:
    """Index (in the region's block) of the statement holding ``event``, if in the region."""
    top = layout.top_statement(event.node, region.block)
    if top is None:
        return None
    index = index_in(region.block, top)
    return index if index >= region.start else None


def before(layout: Layout, statement: cst.CSTNode, block: cst.IndentedBlock) -> Spot:
    """The spot just above ``statement`` and the comment lines that introduce it."""
    first, _ = layout.extent(statement)
    return Spot(first, layout.indent(layout.unit.span(statement).line), block)


def after(layout: Layout, statement: cst.CSTNode, block: cst.IndentedBlock) -> Spot:
    """The spot just below ``statement``."""
    _, last = layout.extent(statement)
    return Spot(last + 1, layout.indent(layout.unit.span(statement).line), block)


def canonical_spot(
    loop: TrainingLoop, layout: Layout, region: Region, role: Role, moved: Iterable[Event] = ()
) -> Spot:
    """Where work of ``role`` goes in ``region``: after the last update work that comes
    earlier in the canonical order, else before the first that comes later, else at the
    region's start. A statement scaling the accumulated gradients (``p.grad /= n``) is update
    work before the clip."""
    skip = {id(e) for e in moved}
    rank = RANK[role]
    lower: list[int] = []
    higher: list[int] = []
    for event in loop.events:
        if event.role not in RANK or event.closure or id(event) in skip:
            continue
        index = region_of(layout, region, event)
        if index is None:
            continue
        if RANK[event.role] < rank:
            lower.append(index)
        elif RANK[event.role] > rank:
            higher.append(index)
    body = region.block.body
    if rank > RANK[Role.UNSCALE]:  # a scaling of the accumulated gradients comes before clip and step
        lower += [i for i in range(region.start, len(body)) if scales_gradients(body[i])]
    if lower:
        return after(layout, body[max(lower)], region.block)
    if higher:
        return before(layout, body[min(higher)], region.block)
    if region.start < len(body):
        return before(layout, body[region.start], region.block)
    return after(layout, body[region.start - 1], region.block)
