"""Fixes that restore the canonical update skeleton, one builder per kind of finding.

Each builder reads the loop model and returns a :class:`Fix` or None. None means the
rewrite would need a guess the code does not settle (several optimizers, no block to
move into, a statement shared with other code); a missing fix is better than a wrong one.
"""

from __future__ import annotations

import libcst as cst

from gradlint.diagnostics import Applicability, Fix
from gradlint.fixes.boundary import Region, Spot, after, before, boundary_region, canonical_spot, index_in
from gradlint.fixes.edits import (
    delete_statement,
    insert_statement,
    movable,
    move_statements,
    operand,
    replace_node,
    wrap_statement,
)
from gradlint.fixes.layout import layout_of
from gradlint.model.events import Event, Place, Role, TrainingLoop
from gradlint.model.syntax import dotted, first_arg
from gradlint.names import Kind

SAFE = Applicability.SAFE
UNSAFE = Applicability.UNSAFE


def _call(loop: TrainingLoop, event: Event) -> str:
    node = event.node
    if isinstance(node, cst.Call):
        return f"`{loop.unit.code(node.func).strip()}()`"
    return f"`{loop.unit.code(node).strip().splitlines()[0]}`"


def sole_step(loop: TrainingLoop) -> Event | None:
    """The loop's one optimizer step (None with several optimizers or none)."""
    steps = _steps(loop)
    return steps[0] if len(steps) == 1 else None


def _steps(loop: TrainingLoop) -> list[Event]:
    return [e for e in loop.of(Role.STEP) if not e.closure]


def _all_steps_in(loop: TrainingLoop, region: Region) -> bool:
    """The loop's steps all run in ``region`` (so update work placed there follows them)."""
    steps = _steps(loop)
    return bool(steps) and all(_in_region(loop, region, s) for s in steps)


def scaler_unscale(loop: TrainingLoop, step: Event | None = None) -> str | None:
    """``scaler.unscale_(optimizer)`` as the loop would write it, for ``step`` (default: the
    loop's only step) when that is a GradScaler's ``scaler.step(optimizer)``."""
    step = step or sole_step(loop)
    if step is None or step.kind is not Kind.SCALER or not isinstance(step.node, cst.Call):
        return None
    optimizer = first_arg(step.node)
    if optimizer is None or not isinstance(step.node.func, cst.Attribute):
        return None
    scaler = loop.unit.code(step.node.func.value).strip()
    return f"{scaler}.unscale_({loop.unit.code(optimizer).strip()})"


def _move(loop: TrainingLoop, events: list[Event], spot: Spot | None, message: str,
          new_lines: tuple[str, ...] = (), applicability: Applicability = SAFE) -> Fix | None:
    if spot is None:
        return None
    statements = []
    for event in events:
        statement = movable(loop, event)
        if statement is None:
            return None
        if not any(s is statement for s in statements):
            statements.append(statement)
    edits = move_statements(loop, statements, spot, new_lines)
    return Fix(applicability, message, edits) if edits else None


def _in_region(loop: TrainingLoop, region: Region, event: Event) -> bool:
    layout = layout_of(loop.unit)
    top = layout.top_statement(event.node, region.block)
    return top is not None and index_in(region.block, top) >= region.start


def clip_to_boundary(loop: TrainingLoop, clip: Event) -> Fix | None:
    """GL101: move a per-micro-batch clip to the boundary, after ``scaler.unscale_`` (added
    when a GradScaler steps and none exists) and just before the step."""
    block = loop.in_accumulate(clip)
    if block is not None:
        return _clip_under_sync_gradients(loop, clip, block)
    region = boundary_region(loop, layout_of(loop.unit))
    if region is None or not _all_steps_in(loop, region):
        return None
    if any(s.kind is Kind.SCALER for s in _steps(loop)) and sole_step(loop) is None:
        return None  # which optimizer to unscale (and whether a scaler exists) is a guess
    unscales = [e for e in loop.of(Role.UNSCALE) if e.place is Place.MICRO and e.order < clip.order]
    at_boundary = any(_in_region(loop, region, e) for e in loop.of(Role.UNSCALE))
    moved = [*unscales, clip]
    unscale = scaler_unscale(loop)
    new_lines = (unscale,) if unscale and not unscales and not at_boundary else ()
    spot = canonical_spot(loop, layout_of(loop.unit), region, Role.CLIP, moved)
    what = "unscale and clip" if new_lines or unscales else "clip"
    return _move(loop, moved, spot, f"Move {_call(loop, clip)} to the update boundary ({what} once, "
                 "just before the step)", new_lines)


def _clip_under_sync_gradients(loop: TrainingLoop, clip: Event, block: cst.With) -> Fix | None:
    accelerator = clip.receiver if clip.framework == "accelerate" else _accelerator_of(block)
    statement = movable(loop, clip)
    if accelerator is None or statement is None:
        return None
    header = f"if {accelerator}.sync_gradients:"
    edits = wrap_statement(loop, statement, header)
    return Fix(SAFE, f"Clip only when gradients are synchronized (`{header}`)", edits) if edits else None


def _accelerator_of(block: cst.With) -> str | None:
    for item in block.items:
        call = item.item
        if isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) and call.func.attr.value == "accumulate":
            return dotted(call.func.value)
    return None


def step_to_boundary(loop: TrainingLoop, step: Event) -> Fix | None:
    """GL102: move the step (and a per-micro-batch ``scaler.update()``) to the boundary."""
    region = boundary_region(loop, layout_of(loop.unit))
    if region is None:
        return None
    updates = [e for e in loop.of(Role.SCALER_UPDATE) if e.place is Place.MICRO]
    moved = sorted([step, *updates], key=lambda e: e.order)
    spot = canonical_spot(loop, layout_of(loop.unit), region, Role.STEP, moved)
    return _move(loop, moved, spot, f"Move {_call(loop, step)} to the update boundary")


def zero_grad_to_boundary(loop: TrainingLoop, zero: Event) -> Fix | None:
    """GL103 (unsafe: code between the two places may read ``.grad`` per micro-batch on
    purpose): move zero_grad to the boundary, after the step (or remove it when the
    boundary already zeroes the same gradients)."""
    if loop.in_accumulate(zero) is not None:
        return _zero_grad_under_accumulate(loop, zero)
    region = boundary_region(loop, layout_of(loop.unit))
    if region is None or not _all_steps_in(loop, region):
        return None
    same = [e for e in loop.of(Role.ZERO_GRAD) if e is not zero and _in_region(loop, region, e)
            and e.receiver == zero.receiver and e.node.__class__ is zero.node.__class__]
    if same:
        statement = movable(loop, zero)
        edits = delete_statement(loop, statement) if statement is not None else None
        return Fix(UNSAFE, f"Remove {_call(loop, zero)}: the update boundary already zeroes the gradients",
                   edits) if edits else None
    spot = canonical_spot(loop, layout_of(loop.unit), region, Role.ZERO_GRAD, [zero])
    return _move(loop, [zero], spot, f"Move {_call(loop, zero)} to the update boundary, after the step",
                 applicability=UNSAFE)


def _zero_grad_under_accumulate(loop: TrainingLoop, zero: Event) -> Fix | None:
    """Inside ``accelerator.accumulate()``: the prepared optimizer's zero_grad belongs after
    its step (Accelerate skips it until the boundary); the model's own zero_grad after the
    step becomes the optimizer's (unsafe: assumes the optimizer holds the model's parameters)."""
    step = sole_step(loop)
    layout = layout_of(loop.unit)
    statement = movable(loop, zero)
    block = layout.block_of(statement) if statement is not None else None
    if step is None or block is None or layout.top_statement(step.node, block) is None:
        return None
    if zero.kind is Kind.OPTIMIZER:
        spot = canonical_spot(loop, layout, Region(block), Role.ZERO_GRAD, [zero])
        return _move(loop, [zero], spot, f"Move {_call(loop, zero)} after {_call(loop, step)}",
                     applicability=UNSAFE)
    node, optimizer = zero.node, step.target
    if zero.order < step.order or optimizer is None or step.kind is not Kind.OPTIMIZER:
        return None
    if not (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)):
        return None
    edits = replace_node(loop, node.func.value, optimizer)
    return Fix(UNSAFE, f"Zero through the prepared optimizer: `{optimizer}.zero_grad()`", edits) if edits else None


def scheduler_to_boundary(loop: TrainingLoop, scheduler: Event) -> Fix | None:
    """GL104 (unsafe: the schedule's horizon may be counted in micro-batches): move the
    scheduler step to the boundary, after the optimizer step (or remove it when the boundary
    already advances the same scheduler, so it never steps twice per update)."""
    region = boundary_region(loop, layout_of(loop.unit))
    if region is None or not _all_steps_in(loop, region):
        return None
    if any(e is not scheduler and _in_region(loop, region, e) and e.receiver == scheduler.receiver
           for e in loop.of(Role.SCHEDULER_STEP)):
        statement = movable(loop, scheduler)
        edits = delete_statement(loop, statement) if statement is not None else None
        return Fix(UNSAFE, f"Remove {_call(loop, scheduler)}: the update boundary already advances it",
                   edits) if edits else None
    spot = canonical_spot(loop, layout_of(loop.unit), region, Role.SCHEDULER_STEP, [scheduler])
    return _move(loop, [scheduler], spot, f"Move {_call(loop, scheduler)} to the update boundary, "
                 "after the optimizer step", applicability=UNSAFE)


def _same_block_spot(loop: TrainingLoop, moving: Event, anchor: Event, where: str) -> Spot | None:
    """Just before or after ``anchor``'s statement in the block of ``moving``'s statement."""
    layout = layout_of(loop.unit)
    statement = movable(loop, moving)
    block = layout.block_of(statement) if statement is not None else None
    top = layout.top_statement(anchor.node, block) if block is not None else None
    if top is None:
        return None
    return before(layout, top, block) if where == "before" else after(layout, top, block)


def clip_before_step(loop: TrainingLoop, clip: Event, step: Event) -> Fix | None:
    """GL301: move the clip to just before the step it follows (after
    ``scaler.unscale_(optimizer)``, added when a GradScaler steps without one)."""
    if any(step.order < e.order < clip.order for e in loop.of(Role.UNSCALE)):
        return None  # unscale after the step too: the update itself needs rewriting
    backward = max((e.order for e in loop.of(Role.BACKWARD) if e.order < step.order), default=-1)
    unscale = scaler_unscale(loop) if clip.framework == "torch" else None
    unscaled = any(backward < e.order < step.order for e in loop.of(Role.UNSCALE))
    spot = _same_block_spot(loop, clip, step, "before")
    return _move(loop, [clip], spot, f"Move {_call(loop, clip)} before {_call(loop, step)}",
                 (unscale,) if unscale and not unscaled else ())


def scheduler_after_step(loop: TrainingLoop, scheduler: Event) -> Fix | None:
    """GL302: move the scheduler step to just after the optimizer step (and its update work)."""
    step = sole_step(loop)
    if step is None:
        return None
    layout = layout_of(loop.unit)
    statement = movable(loop, scheduler)
    block = layout.block_of(statement) if statement is not None else None
    if block is None or layout.top_statement(step.node, block) is None:
        return None
    spot = canonical_spot(loop, layout, Region(block), Role.SCHEDULER_STEP, [scheduler])
    return _move(loop, [scheduler], spot, f"Move {_call(loop, scheduler)} after {_call(loop, step)}")


def zero_grad_after_step(loop: TrainingLoop, zero: Event) -> Fix | None:
    """GL305 (unsafe: the zeroing may skip an update on purpose): move zero_grad to just
    after the step of the same update."""
    step = sole_step(loop)
    if step is None:
        return None
    layout = layout_of(loop.unit)
    statement = movable(loop, zero)
    block = layout.block_of(statement) if statement is not None else None
    if block is not None and layout.top_statement(step.node, block) is not None:
        region: Region | None = Region(block)
    else:
        region = boundary_region(loop, layout)
        if region is None or not _in_region(loop, region, step):
            return None
    spot = canonical_spot(loop, layout, region, Role.ZERO_GRAD, [zero])
    return _move(loop, [zero], spot, f"Move {_call(loop, zero)} after {_call(loop, step)}", applicability=UNSAFE)


def unscale_before_clip(loop: TrainingLoop, clip: Event) -> Fix | None:
    """GL303: unscale just before the clip (moving a later ``unscale_`` of the same update
    there, else inserting ``scaler.unscale_(optimizer)``)."""
    if clip.place is Place.MICRO:
        return None  # unscaling per micro-batch raises; GL101's fix unscales at the boundary
    if any(e.order < clip.order and not e.closure for e in loop.of(Role.STEP)
           if not any(e.order < b.order < clip.order for b in loop.of(Role.BACKWARD))):
        return None  # the clip runs after the step: GL301's fix moves it and unscales
    step = next((e for e in _steps(loop) if e.order > clip.order and e.kind is Kind.SCALER), None)
    unscale = scaler_unscale(loop, step) if step is not None else None
    statement = movable(loop, clip)
    layout = layout_of(loop.unit)
    block = layout.block_of(statement) if statement is not None else None
    if unscale is None or block is None:
        return None
    spot = before(layout, statement, block)
    later = [e for e in loop.of(Role.UNSCALE) if e.order > clip.order]
    if later:
        return _move(loop, later[:1], spot, f"Move `{unscale}` before {_call(loop, clip)}")
    return Fix(SAFE, f"Insert `{unscale}` before {_call(loop, clip)}", insert_statement(loop, spot, unscale))


def divide_loss(loop: TrainingLoop, backward: Event) -> Fix | None:
    """GL201 (unsafe: assumes every micro-batch weighs the same and, with a final partial
    window, that the loader has ``len()``): divide the loss inside the backward call by the
    window's size, leaving the logged loss as it was."""
    loss, divisor = backward.loss, _window_size(loop)
    if loss is None or divisor is None:
        return None
    if isinstance(loss, cst.Call) and isinstance(loss.func, cst.Attribute) and loss.func.attr.value == "scale":
        inner = first_arg(loss)  # scaler.scale(loss): divide the loss, not the scaled value
        if inner is None:
            return None
        loss, receiver = inner, False
    else:
        node = backward.node
        receiver = isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.value is loss
    # the span of a parenthesized loss lies inside its parentheses, which stay
    divided = f"{operand(loop, loss.with_changes(lpar=(), rpar=()))} / {divisor}"
    edits = replace_node(loop, loss, f"({divided})" if receiver and not loss.lpar else divided)
    return Fix(UNSAFE, f"Divide the loss by {divisor.strip('()')}", edits) if edits else None


def _window_size(loop: TrainingLoop) -> str | None:
    """N, or for a gate that also steps on the epoch's last micro-batch of an
    ``enumerate(loader)`` loop, the size of the window the micro-batch is in."""
    if loop.factor is None:
        return None
    n = operand(loop, loop.factor)
    gate = loop.primary_gate
    if gate is None or not gate.final_branch:
        return n
    total = _epoch_length(loop, gate)
    if total is None:
        return n  # GL202 then asks for the window's actual size
    return f"min({n}, {total} - {gate.counter} + {gate.counter} % {n})"


def _epoch_length(loop: TrainingLoop, gate) -> str | None:
    """``len(loader)`` from ``(i + 1) % N == 0 or i + 1 == len(loader)`` over
    ``for i, batch in enumerate(loader)``, the only final-window form whose window size
    follows from the counter alone."""
    root = loop.root
    if not (gate.offset_one and gate.modulus is not None and isinstance(root, cst.For)):
        return None
    source, target = root.iter, root.target
    if not (isinstance(source, cst.Call) and dotted(source.func) == "enumerate" and len(source.args) == 1
            and isinstance(target, cst.Tuple) and dotted(target.elements[0].value) == gate.counter):
        return None
    test = gate.node.test
    operands = [test.left, test.right] if isinstance(test, cst.BooleanOperation) else []
    for expr in operands:
        if isinstance(expr, cst.Comparison) and len(expr.comparisons) == 1 \
                and isinstance(expr.comparisons[0].operator, cst.Equal):
            sides = [expr.left, expr.comparisons[0].comparator]
            for side, other in (sides, sides[::-1]):
                if loop.unit.code(side).replace(" ", "").strip("()") == f"{gate.counter}+1":
                    return operand(loop, other)
    return None


def remove_division(loop: TrainingLoop, divisor: cst.BaseExpression) -> Fix | None:
    """GL204 (unsafe: the framework's factor may come from configuration gradlint does not
    read): drop a manual ``/ N``: ``loss = loss / N`` and ``loss /= N`` go, ``x / N``
    becomes ``x``."""
    layout = layout_of(loop.unit)
    parent = layout.parent(divisor)
    message = f"Remove the manual division by {loop.unit.code(divisor).strip()}"
    if isinstance(parent, cst.AugAssign) and isinstance(parent.operator, cst.DivideAssign):
        return _delete(loop, parent, message)
    if not (isinstance(parent, cst.BinaryOperation) and isinstance(parent.operator, cst.Divide)
            and parent.right is divisor):
        return None
    left = loop.unit.code(parent.left).strip()
    assign = layout.parent(parent)
    if isinstance(assign, cst.Assign) and len(assign.targets) == 1 and assign.value is parent \
            and loop.unit.code(assign.targets[0].target).strip() == left:
        return _delete(loop, assign, message)
    edits = replace_node(loop, parent, left)
    return Fix(UNSAFE, message, edits) if edits else None


def _delete(loop: TrainingLoop, small: cst.CSTNode, message: str) -> Fix | None:
    statement = layout_of(loop.unit).parent(small)
    if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
        return None
    edits = delete_statement(loop, statement)
    return Fix(UNSAFE, message, edits) if edits else None
