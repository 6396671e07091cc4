"""GL204 double-accumulation-scaling: a manual 1/N where the framework already divides."""

from __future__ import annotations

from collections.abc import Iterator

from gradlint.catalogue import CATALOGUE
from gradlint.fixes import primitives as edit
from gradlint.model.events import Role, TrainingLoop
from gradlint.model.loss import Divisor
from gradlint.rules.base import Change, Finding, Invalid, Rule
from gradlint.rules.readers import deepspeed_divisor


class DoubleAccumulationScaling(Rule):
    info = CATALOGUE["GL204"]

    def check(self, loop: TrainingLoop) -> Iterator[Finding]:
        factor = loop.factor_code()
        for event in loop.of(Role.BACKWARD):
            divisors = event.loss_trace.divisors if event.framework in ("accelerate", "deepspeed") else []
            manual = [d for d in divisors if d.text == factor or d.names_accumulation]
            deepspeed = [d for d in manual if deepspeed_divisor(event.unit, d.node)]
            if not event.framework_divides:
                manual = deepspeed
            if not manual:
                continue
            by_engine = event.framework == "deepspeed" or bool(deepspeed)
            owner = "DeepSpeed's engine.backward" if by_engine else "accelerator.backward"
            why = "" if by_engine else " (Accelerator(gradient_accumulation_steps=...))"
            yield Finding(event.span, f"{owner} already divides the loss; remove the manual division by "
                          f"{manual[0].text}", self.fix(_undivide, loop, manual[0]),
                          detail=f"{owner}{why} divides the loss by the accumulation steps itself, so the "
                          "gradients end up N times too small.")

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
        Invalid("""\
class Trainer:
    def __init__(self, model, optimizer, accum_steps):
        self._accelerator = Accelerator(gradient_accumulation_steps=accum_steps)
        self.model, self.optimizer = self._accelerator.prepare(model, optimizer)
        self.accum_steps = accum_steps

    def train(self, loader):
        for batch in loader:
            with self._accelerator.accumulate(self.model):
                outputs = {"loss": self.model(**batch).loss}
                outputs["loss"] = outputs["loss"] / self.accum_steps
                self._accelerator.backward(outputs["loss"])
                self.optimizer.step()
                self.optimizer.zero_grad()
""", ((12, "GL204"),)),
        Invalid("""\
def train(model, loader, optimizer):
    accelerator = Accelerator()
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    if accelerator.state.deepspeed_plugin is not None:
        accum_steps = accelerator.state.deepspeed_plugin.deepspeed_config["gradient_accumulation_steps"]
    else:
        accum_steps = 1
    for step, batch in enumerate(loader):
        loss = model(**batch).loss / accum_steps
        accelerator.backward(loss)
        if step % accum_steps == 0:
            optimizer.step()
            optimizer.zero_grad()
""", ((10, "GL204"),)),
    )


def _undivide(loop: TrainingLoop, divisor: Divisor) -> Change | None:
    """Drop the manual division (unsafe: the framework's factor may come from configuration
    gradlint does not read)."""
    return Change(f"Remove the manual division by {loop.unit.text_of(divisor.node).strip()}",
                  edit.undivide(loop, divisor.node))
