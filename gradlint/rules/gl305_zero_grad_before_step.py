"""GL305 zero-grad-before-step: zero_grad between the last backward and the step."""

from __future__ import annotations

from collections.abc import Iterator

from gradlint.catalogue import CATALOGUE
from gradlint.fixes import primitives as edit
from gradlint.model.events import Event, Role, TrainingLoop
from gradlint.model.held_optimizer import held_optimizer
from gradlint.model.update_scope import refills_between
from gradlint.names import Kind
from gradlint.rules.base import Change, Finding, Invalid, Rule
from gradlint.rules.readers import backward_before, call_text, on_engine_path, quoted, sole_step, update_steps


class ZeroGradBeforeStep(Rule):
    info = CATALOGUE["GL305"]
    reads_update_scopes = True  # in a function that only updates: a zeroing with nothing refilling before the step

    def check(self, loop: TrainingLoop) -> Iterator[Finding]:
        steps = [s for s in update_steps(loop) if not on_engine_path(loop, s)]
        targets = {held_optimizer(s) for s in steps}
        for step in steps:
            backward = backward_before(loop, step)
            if backward is None and not loop.update_only:
                continue
            for zero in loop.of(Role.ZERO_GRAD):
                if zero.place is not step.place or not loop.flows(zero, step):
                    continue
                if backward is not None and not loop.flows(backward, zero):
                    continue
                if backward is None and refills_between(loop, zero, step):
                    continue  # the caller backpropagated; a call in between may do it again (a closure)
                held = held_optimizer(step)
                if zero.kind is Kind.OPTIMIZER and held_optimizer(zero) != held and held is not None:
                    continue  # another optimizer's gradients (GANs, actor-critic)
                if zero.kind is not Kind.OPTIMIZER and len(targets) > 1:
                    continue
                yield Finding(zero.span, f"{call_text(loop, zero)} runs before {call_text(loop, step)}; zero after "
                              "the step", self.fix(_zero_after_step, loop, zero),
                              detail="It runs after the last backward of the update, so the step sees zero "
                              "gradients.")

    VALID = (
        """\
def train(model, loader, optimizer):
    for x, y in loader:
        model(x, y).backward()
        optimizer.step()
        optimizer.zero_grad()
""",
        """\
def step_optimizer(optimizer, scaler, closure):
    def step_fn():
        closure()
        scaler.step(optimizer)

    optimizer.zero_grad()
    step_fn()
""",
    )
    INVALID = (
        Invalid("""\
def train(model, loader, optimizer):
    for x, y in loader:
        model(x, y).backward()
        optimizer.zero_grad()
        optimizer.step()
""", ((4, "GL305"),), fixed="""\
def train(model, loader, optimizer):
    for x, y in loader:
        model(x, y).backward()
        optimizer.step()
        optimizer.zero_grad()
"""),
        Invalid("""\
def step_optimizer(optimizer, scaler):
    def step_fn():
        scaler.step(optimizer)

    optimizer.zero_grad()
    step_fn()
""", ((5, "GL305"),)),
    )


def _zero_after_step(loop: TrainingLoop, zero: Event) -> Change | None:
    """Move zero_grad to just after the step of the same update (unsafe: the zeroing may
    skip an update on purpose)."""
    step = sole_step(loop)
    if step is None:
        return None
    region = edit.block_region(loop, zero)
    if region is None or not edit.in_region(loop, region, step):
        region = edit.update_region(loop)
        if region is None or not edit.in_region(loop, region, step):
            return None
    return Change(f"Move {quoted(loop, zero)} after {quoted(loop, step)}",
                  edit.move(loop, [zero], edit.canonical(loop, region, Role.ZERO_GRAD, [zero])))
