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
        for clip in loop.of(Role.CLIP):
            backwards: list[Event | None] = [*last_backwards(loop, clip)] or [None]
            steps = [s for b in backwards for s in _steps_between(loop, b, clip)]
            if not steps:
                continue
            horizon = _next_backward_or_end(loop, clip)
            stepped = {s.target for s in steps}
            if any(clip.order < e.order < horizon and not e.closure and e.target not in stepped
                   and not _conditional_to(e, clip) for e in loop.of(Role.STEP)):
                continue  # another optimizer steps after the clip, whenever it runs (GANs, several optimizers)
            step = call_text(loop, steps[-1])
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
    at the same place."""
    return [
        e for e in loop.of(Role.STEP)
        if not e.closure and e.place is before.place and loop.flows(e, before)
        and (after is None or loop.flows(after, e))
    ]


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
    spot = edit.next_to(loop, step, "before", within=clip)
    new_lines = edit.guarded_code(loop, step, spot, unscale) if unscale and not unscaled else []
    if new_lines is None:
        return None
    return Change(f"Move {quoted(loop, clip)} before {quoted(loop, step)}", edit.move(loop, [clip], spot, new_lines))
