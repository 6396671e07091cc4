"""GL204 double-accumulation-scaling: a manual 1/N where the framework already divides."""

from __future__ import annotations

from collections.abc import Iterator

from gradlint.catalogue import CATALOGUE
from gradlint.fixes import primitives as edit
from gradlint.model.events import Role, TrainingLoop
from gradlint.model.loss import Divisor
from gradlint.rules.base import Change, Finding, Invalid, Rule


class DoubleAccumulationScaling(Rule):
    info = CATALOGUE["GL204"]

    def check(self, loop: TrainingLoop) -> Iterator[Finding]:
        factor = loop.factor_code()
        for event in loop.of(Role.BACKWARD):
            if not event.framework_divides:
                continue
            manual = [d for d in event.loss_trace.divisors if d.text == factor or d.names_accumulation]
            if not manual:
                continue
            owner = "DeepSpeed's engine.backward" if event.framework == "deepspeed" else (
                "accelerator.backward (Accelerator(gradient_accumulation_steps=...))")
            yield Finding(event.span, f"the loss is divided by {manual[0].text} by hand, but {owner} already divides "
                          "it by the accumulation steps, so gradients end up N times too small; remove the "
                          "manual division", self.fix(_undivide, loop, manual[0]))

    VALID = (
        """\
def train(model, loader, optimizer):
    accelerator = Accelerator(gradient_accumulation_steps=4)
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    for batch in loader:
        with accelerator.accumulate(model):
            accelerator.backward(model(**batch).loss)
            optimizer.step()
            optimizer.zero_grad()
""",
    )
    INVALID = (
        Invalid("""\
def train(model, loader, optimizer, accum_steps):
    accelerator = Accelerator(gradient_accumulation_steps=accum_steps)
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    for batch in loader:
        with accelerator.accumulate(model):
            loss = model(**batch).loss
            loss = loss / accum_steps
            accelerator.backward(loss)
            optimizer.step()
            optimizer.zero_grad()
""", ((8, "GL204"),), fixed="""\
def train(model, loader, optimizer, accum_steps):
    accelerator = Accelerator(gradient_accumulation_steps=accum_steps)
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    for batch in loader:
        with accelerator.accumulate(model):
            loss = model(**batch).loss
            accelerator.backward(loss)
            optimizer.step()
            optimizer.zero_grad()
"""),
    )


def _undivide(loop: TrainingLoop, divisor: Divisor) -> Change | None:
    """Drop the manual division (unsafe: the framework's factor may come from configuration
    gradlint does not read)."""
    return Change(f"Remove the manual division by {loop.unit.text_of(divisor.node).strip()}",
                  edit.undivide(loop, divisor.node))
