"""Small readers of the loop model that several rules share."""

from __future__ import annotations

import libcst as cst

from gradlint.model.events import Event, Place, Role, TrainingLoop


def call_text(loop: TrainingLoop, event: Event) -> str:
    """How the user wrote the call, for messages: ``optimizer.step()``."""
    node = event.node
    if isinstance(node, cst.Call):
        return loop.unit.code(node.func).strip() + "()"
    return loop.unit.code(node).strip().splitlines()[0]


def step_text(loop: TrainingLoop) -> str:
    """The loop's optimizer step as written, or a generic name."""
    steps = [e for e in loop.of(Role.STEP) if not e.closure]
    return call_text(loop, steps[0]) if steps else "optimizer.step()"


def engine_loop(loop: TrainingLoop) -> bool:
    """A DeepSpeed loop: the engine owns the boundary, the scaling and the clipping."""
    return any(e.role is Role.BACKWARD and e.engine_owned for e in loop.events)


def per_micro_batch(loop: TrainingLoop, role: Role) -> list[Event]:
    """Events of ``role`` that run once per micro-batch of an accumulation window."""
    if not loop.accumulating or engine_loop(loop):
        return []
    return [e for e in loop.of(role) if e.place is Place.MICRO and not e.engine_owned and not e.closure]


def backward_before(loop: TrainingLoop, event: Event) -> Event | None:
    """The last backward call before ``event`` on the same path through the loop body."""
    found = [e for e in loop.of(Role.BACKWARD) if loop.flows(e, event)]
    return found[-1] if found else None


def last_backwards(loop: TrainingLoop, event: Event) -> list[Event]:
    """Each backward call that is the last one before ``event`` on some path through the
    iteration (one per arm when ``if amp: scaled backward`` / ``else: backward``)."""
    before = [b for b in loop.of(Role.BACKWARD) if loop.flows(b, event)]
    return [b for b in before if not any(loop.flows(b, later) for later in before)]
