"""GL307 scaler-update-misplaced: ``scaler.update()`` per micro-batch, or never called."""

from __future__ import annotations

import re
from collections.abc import Iterator

import libcst as cst

from gradlint.catalogue import CATALOGUE
from gradlint.fixes import primitives as edit
from gradlint.model.events import Event, Place, Role, TrainingLoop
from gradlint.model.syntax import dotted
from gradlint.names import Kind
from gradlint.rules.base import Change, Finding, Invalid, Rule
from gradlint.rules.readers import call_text, engine_loop, per_micro_batch, steps_of


class ScalerUpdateMisplaced(Rule):
    info = CATALOGUE["GL307"]

    def check(self, loop: TrainingLoop) -> Iterator[Finding]:
        if engine_loop(loop):
            return
        scaler_steps = [e for e in steps_of(loop) if e.kind is Kind.SCALER and not e.engine_owned]
        boundary = [e for e in scaler_steps if e.place is Place.BOUNDARY]
        for update in per_micro_batch(loop, Role.SCALER_UPDATE):
            step = _step_of(boundary, update)
            if step is None or _follows_own_step(scaler_steps, update):
                continue  # the scaler steps per micro-batch too: GL102's finding, not a misplaced update
            yield Finding(update.span, f"{call_text(loop, update)} runs on every micro-batch; call it right after "
                          f"{call_text(loop, step)}", self.fix(_after_step, loop, update, step),
                          detail=f"{call_text(loop, step)} runs once per window, so the loss scale changes inside "
                          "the window and the accumulated gradient mixes scales.")
        updates = loop.of(Role.SCALER_UPDATE)
        if updates or not isinstance(loop.root, (cst.For, cst.While)):
            return  # a per-batch function's caller may update the scaler
        for step in scaler_steps:
            receiver = _receiver(step)
            if receiver is None or _updated_in_unit(loop, receiver) or _handed_on(loop, receiver):
                continue
            yield Finding(step.span, f"{call_text(loop, step)} is never followed by {receiver}.update(); call it "
                          "after the step", detail="The loss scale never adapts, and after one overflow every step "
                          "is skipped.")

    VALID = (
        """\
def train(model, loader, optimizer, scaler, accum):
    for i, (x, y) in enumerate(loader):
        scaler.scale(model(x, y) / accum).backward()
        if (i + 1) % accum == 0:
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad()
""",
    )
    INVALID = (
        Invalid("""\
def train(model, loader, optimizer, scaler, accum):
    for i, (x, y) in enumerate(loader):
        scaler.scale(model(x, y) / accum).backward()
        scaler.update()
        if (i + 1) % accum == 0:
            scaler.step(optimizer)
            optimizer.zero_grad()
""", ((4, "GL307"),), fixed="""\
def train(model, loader, optimizer, scaler, accum):
    for i, (x, y) in enumerate(loader):
        scaler.scale(model(x, y) / accum).backward()
        if (i + 1) % accum == 0:
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad()
"""),
        Invalid("""\
def train(model, loader, optimizer, scaler, accum):
    for i, (x, y) in enumerate(loader):
        scaler.scale(model(x, y) / accum).backward()
        if (i + 1) % accum == 0:
            scaler.step(optimizer)
            optimizer.zero_grad()
""", ((5, "GL307"),)),
    )


def _receiver(event: Event) -> str | None:
    node = event.receiver_node
    return dotted(node) if node is not None else None


def _step_of(steps: list[Event], update: Event) -> Event | None:
    """The boundary ``scaler.step`` of the scaler that ``update`` updates."""
    receiver = _receiver(update)
    return next((s for s in steps if _receiver(s) == receiver), None)


def _follows_own_step(steps: list[Event], update: Event) -> bool:
    """Whether a ``scaler.step`` of the same scaler runs where ``update`` does, just before it
    in the same block (a repeat loop's own step and update, inside the window)."""
    receiver = _receiver(update)
    block = _block_of(update)
    return block is not None and any(_receiver(s) == receiver and s.place is update.place and s.order < update.order
                                     and _block_of(s) is block for s in steps)


def _block_of(event: Event) -> cst.CSTNode | None:
    return next((a for a in reversed(event.ancestors) if isinstance(a, cst.IndentedBlock)), None)


def _updated_in_unit(loop: TrainingLoop, receiver: str) -> bool:
    """Whether the loop's unit calls ``receiver.update`` anywhere (outside the loop too)."""
    code = loop.unit.module.code
    return re.search(rf"(?<![\w.]){re.escape(receiver)}\s*\.\s*update\b", code) is not None


def _handed_on(loop: TrainingLoop, receiver: str) -> bool:
    """Whether the loop uses ``receiver`` other than by calling its methods (passed to a
    helper that may update it, tested, stored)."""
    code = loop.unit.text_of(loop.root)
    return re.search(rf"(?<![\w.]){re.escape(receiver)}(?!\s*\.|\w)", code) is not None


def _after_step(loop: TrainingLoop, update: Event, step: Event) -> Change | None:
    """Move the update to the line after the boundary's ``scaler.step``, or remove it when
    the step's block already updates the scaler."""
    region = edit.block_region(loop, step)
    if region is not None and edit.twins(loop, region, update):
        return Change(f"Remove {call_text(loop, update)}: the update boundary already updates the scaler",
                      edit.remove_duplicate(loop, region, [update]))
    return Change(f"Move {call_text(loop, update)} right after {call_text(loop, step)}",
                  edit.move(loop, [update], edit.next_to(loop, step, "after")))
