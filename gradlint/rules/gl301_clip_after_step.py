"""GL301 clip-after-step: gradients clipped after the optimizer step of the same update."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import libcst as cst

from gradlint.catalogue import CATALOGUE
from gradlint.fixes import primitives as edit
from gradlint.model.events import Event, Role, TrainingLoop
from gradlint.rules.base import Change, Finding, Invalid, Rule
from gradlint.rules.readers import call_text, last_backwards, quoted, scaler_unscale


class ClipAfterStep(Rule):
    info = CATALOGUE["GL301"]
    reads_update_scopes = True  # a clip after the step needs no backward in the same function

    def check(self, loop: TrainingLoop) -> Iterator[Finding]:
        reported: set[int] = set()  # the loop's calls of helpers whose clip was reported
        for clip in loop.of(Role.CLIP):
            if clip.callers and id(clip.callers[0][0]) in reported:
                continue  # another clip of the same helper call (`clip_grad_norm_` or `clip_grad_value_`): one finding
            backwards: list[Event | None] = [*last_backwards(loop, clip)] or [None]
            steps = [s for b in backwards for s in _steps_between(loop, b, clip) if not _helper_guard_between(s, clip)]
            if not steps:
                continue
            horizon = _next_backward_or_end(loop, clip)
            stepped = {s.target for s in steps}
            if any(clip.order < e.order < horizon and not e.closure and e.target not in stepped
                   and not _conditional_to(e, clip) for e in loop.of(Role.STEP)):
                continue  # another optimizer steps after the clip, whenever it runs (GANs, several optimizers)
            step = call_text(loop, steps[-1])
            if clip.callers:
                reported.add(id(clip.callers[0][0]))
            yield Finding(clip.span, f"{call_text(loop, clip)} runs after {step}; clip before the step",
                          self.fix(_clip_before, loop, clip, steps[-1]),
                          detail=f"The update has already used the unclipped gradient; clip before {step}.")

    VALID = (
        """\
def train(model, loader, optimizer):
    for x, y in loader:
        model(x, y).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad()
""",
    )
    INVALID = (
        Invalid("""\
def train(model, loader, optimizer, scaler):
    for x, y in loader:
        scaler.scale(model(x, y)).backward()
        scaler.step(optimizer)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.update()
        optimizer.zero_grad()
""", ((5, "GL301"),), fixed="""\
def train(model, loader, optimizer, scaler):
    for x, y in loader:
        scaler.scale(model(x, y)).backward()
        scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad()
"""),
    )


def _steps_between(loop: TrainingLoop, after: Event | None, before: Event) -> list[Event]:
    """Non-closure optimizer steps that run after ``after`` (if any) and before ``before``,
    at the same place; a prepared optimizer's step inside ``accelerator.accumulate()`` at any
    place (Accelerate skips it until the boundary, wherever it stands, so a clip after it, under
    ``sync_gradients`` or not, runs after it on the boundary micro-batch)."""
    return [
        e for e in loop.of(Role.STEP)
        if not e.closure and (e.place is before.place or loop.accelerate_skips(e)) and loop.flows(e, before)
        and (after is None or loop.flows(after, e))
    ]



def _helper_guard_between(step: Event, clip: Event) -> bool:
    """Whether, in a followed helper that holds both, an early return (``if not should_step:
    return``) stands between ``step`` and ``clip``: the helper's own reading makes it its update
    gate, so the clip runs once per update while the step before it runs on every call (GL102's
    finding there); the caller, reading the helper as one plain pass, cannot tell that they are
    not the same update."""
    if step.unit is not clip.unit or not step.callers:
        return False
    for block in clip.ancestors:
        if not isinstance(block, cst.IndentedBlock) or not step.inside(block):
            continue
        for statement in block.body:
            if clip.statement is statement or clip.inside(statement):
                break
            if (isinstance(statement, cst.If) and not step.inside(statement) and _returns(statement.body)
                    and clip.unit.span(statement).line > step.span.line):
                return True
    return False


def _returns(block: cst.BaseSuite) -> bool:
    """Whether ``block`` ends with a ``return``."""
    last = block.body[-1] if isinstance(block, cst.IndentedBlock) and block.body else None
    return isinstance(last, cst.SimpleStatementLine) and bool(last.body) and isinstance(last.body[-1], cst.Return)


def _conditional_to(step: Event, clip: Event) -> bool:
    """Whether ``step`` sits under an ``if`` that ``clip`` is not under: on the path where it is
    false, the clip follows only the earlier step (``if transformer_optimizer: ...step()``)."""
    return any(isinstance(node, cst.If) and not clip.inside(node) for node in step.ancestors)


def _next_backward_or_end(loop: TrainingLoop, event: Event) -> int:
    """The order of the first backward after ``event``, or past the end of the loop."""
    later = [e.order for e in loop.of(Role.BACKWARD) if e.order > event.order]
    return later[0] if later else sys.maxsize


def _clip_before(loop: TrainingLoop, clip: Event, step: Event) -> Change | None:
    """Move the clip to just before the step it follows (after ``scaler.unscale_(optimizer)``,
    added when a GradScaler steps without one)."""
    if any(step.order < e.order < clip.order for e in loop.of(Role.UNSCALE)):
        return None  # unscale after the step too: the update itself needs rewriting
    backward = max((e.order for e in loop.of(Role.BACKWARD) if e.order < step.order), default=-1)
    unscale = scaler_unscale(loop) if clip.framework == "torch" else None
    unscaled = any(backward < e.order < step.order for e in loop.of(Role.UNSCALE))
    spot = edit.next_to(loop, step, "before", within=clip) or edit.next_to(loop, step, "before")
    new_lines = edit.guarded_code(loop, step, spot, unscale) if unscale and not unscaled else []
    if new_lines is None:
        return None
    return Change(f"Move {quoted(loop, clip)} before {quoted(loop, step)}", edit.move(loop, [clip], spot, new_lines))
