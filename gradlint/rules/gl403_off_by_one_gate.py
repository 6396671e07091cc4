"""GL403 off-by-one-gate: a 0-based counter gated with ``% N == 0``."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from gradlint.catalogue import CATALOGUE
from gradlint.model.events import TrainingLoop
from gradlint.model.syntax import names_in
from gradlint.rules.base import Finding, Invalid, Rule


class OffByOneGate(Rule):
    info = CATALOGUE["GL403"]

    def check(self, loop: TrainingLoop) -> Iterator[Finding]:
        gate = loop.primary_gate
        if gate is None or gate.modulus is None or not gate.zero_based or not loop.accumulating:
            return
        if _window_from_deepspeed(loop, gate.modulus):
            return
        counter = gate.counter
        yield Finding(gate.span, f"`{counter} % N == 0` shifts every window by one micro-batch; test "
                      f"`({counter} + 1) % N == 0`", detail=f"`{counter}` is 0 on the first micro-batch, so the "
                      "gate steps after a single micro-batch and every later window is shifted.")

    VALID = (
        """\
def train(model, loader, optimizer, accelerator):
    model, optimizer, loader = accelerator.prepare(model, optimizer, loader)
    accum_steps = accelerator.state.deepspeed_plugin.deepspeed_config["gradient_accumulation_steps"]
    for step, batch in enumerate(loader):
        accelerator.backward(model(**batch).loss)
        if step % accum_steps == 0:
            optimizer.step()
            optimizer.zero_grad()
""",
        """\
def train(model, loader, optimizer, accum_steps):
    for step, (x, y) in enumerate(loader):
        (model(x, y) / accum_steps).backward()
        if (step + 1) % accum_steps == 0:
            optimizer.step()
            optimizer.zero_grad()
""",
        """\
def train(model, loader, optimizer, accum_steps):
    for step, (x, y) in enumerate(loader, start=1):
        (model(x, y) / accum_steps).backward()
        if step % accum_steps == 0:
            optimizer.step()
            optimizer.zero_grad()
""",
    )
    INVALID = (
        Invalid("""\
def train(model, loader, optimizer, accum_steps):
    for step, (x, y) in enumerate(loader):
        (model(x, y) / accum_steps).backward()
        if step % accum_steps == 0:
            optimizer.step()
            optimizer.zero_grad()
""", ((4, "GL403"),)),
    )


def _window_from_deepspeed(loop: TrainingLoop, modulus: cst.BaseExpression) -> bool:
    """N read from a DeepSpeed configuration (Accelerate's
    ``accelerator.state.deepspeed_plugin.deepspeed_config["gradient_accumulation_steps"]``): the
    engine owns the window, and the prepared optimizer's calls under the gate do nothing."""
    unit = loop.unit
    return any("deepspeed" in unit.text_of(value).lower()
               for name in names_in(modulus) for value in unit.bound_values(name))
