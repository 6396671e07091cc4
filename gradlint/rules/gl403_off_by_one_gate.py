"""GL403 off-by-one-gate: a 0-based counter gated with ``% N == 0``."""

from __future__ import annotations

from collections.abc import Iterator

from gradlint.catalogue import CATALOGUE
from gradlint.model.events import TrainingLoop
from gradlint.rules.base import Finding, Invalid, Rule


class OffByOneGate(Rule):
    info = CATALOGUE["GL403"]

    def check(self, loop: TrainingLoop) -> Iterator[Finding]:
        gate = loop.primary_gate
        if gate is None or gate.modulus is None or not loop.accumulating or gate.engine_window:
            return
        counter = gate.counter
        if gate.zero_based:
            yield Finding(gate.span, f"`{counter} % N == 0` shifts every window by one micro-batch; test "
                          f"`({counter} + 1) % N == 0`", detail=f"`{counter}` is 0 on the first micro-batch, so the "
                          "gate steps after a single micro-batch and every later window is shifted.")
        elif gate.one_based:
            yield Finding(gate.span, f"`({counter} + 1) % N == 0` closes the first window one micro-batch early; "
                          f"test `{counter} % N == 0`", detail=f"`{counter}` is incremented before the gate, so it "
                          "is already 1 on the first micro-batch and the first window has N - 1 micro-batches.")

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
        """\
def train(model, loader, optimizer, accum_steps):
    global_step = 0
    for x, y in loader:
        global_step += 1
        (model(x, y) / accum_steps).backward()
        if global_step % accum_steps == 0:
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
        Invalid("""\
def train(model, loader, optimizer, accum_steps, epochs):
    global_step = 0
    for epoch in range(epochs):
        for x, y in loader:
            global_step += 1
            (model(x, y) / accum_steps).backward()
            if (global_step + 1) % accum_steps == 0:
                optimizer.step()
                optimizer.zero_grad()
""", ((7, "GL403"),)),
    )

