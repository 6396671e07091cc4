"""GL201: the loss of an accumulation window is not divided by N."""

from __future__ import annotations

from collections.abc import Iterator

from gradlint.catalogue import CATALOGUE
from gradlint.fixes import divide_loss
from gradlint.model.events import Event, Role, Shape, TrainingLoop
from gradlint.model.loss import Scaling, trace_loss
from gradlint.rules.base import Finding, Rule
from gradlint.rules.helpers import per_micro_batch


def framework_divides(loop: TrainingLoop, event: Event) -> bool:
    """``accelerator.backward`` under ``Accelerator(gradient_accumulation_steps=N)`` and
    DeepSpeed's ``engine.backward`` divide the loss themselves."""
    if event.framework == "deepspeed":
        return True
    return event.framework == "accelerate" and loop.unit.facts.accelerator_accumulates


class MissingAccumulationScaling(Rule):
    info = CATALOGUE["GL201"]

    def check(self, loop: TrainingLoop) -> Iterator[Finding]:
        factor = loop.factor_code()
        if factor is None or loop.shape is Shape.ACCELERATE:
            return
        for event in per_micro_batch(loop, Role.BACKWARD):
            if framework_divides(loop, event):
                continue
            if trace_loss(event.unit, event.loss, event.span.line).scaling is not Scaling.UNSCALED:
                continue
            yield Finding(event.span, f"this loss is backpropagated on each of {factor} micro-batches without "
                          f"division, so the gradient (and the effective learning rate) is {factor} times too "
                          f"large; divide the loss by {factor} (or by the window's valid-token count) before backward",
                          divide_loss(loop, event))
