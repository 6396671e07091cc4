"""GL406 deepspeed-manual-accumulation: a DeepSpeed engine stepped under a manual accumulation gate."""

from __future__ import annotations

from collections.abc import Iterator

from gradlint.catalogue import CATALOGUE
from gradlint.model.events import Place, Role, Shape, TrainingLoop
from gradlint.names import Kind
from gradlint.rules.base import Finding, Invalid, Rule
from gradlint.rules.readers import call_text


class DeepspeedManualAccumulation(Rule):
    info = CATALOGUE["GL406"]

    def check(self, loop: TrainingLoop) -> Iterator[Finding]:
        if loop.shape not in (Shape.GATED, Shape.NESTED) or "set_gradient_accumulation_boundary" in loop.callees:
            return
        facts = loop.unit.facts
        engine_backwards = [e for e in loop.of(Role.BACKWARD) if e.kind is Kind.ENGINE and e.place is Place.MICRO]
        if not engine_backwards:
            return
        for event in loop.of(Role.STEP):
            name = event.receiver
            if event.kind is not Kind.ENGINE or event.place is not Place.BOUNDARY or not name:
                continue
            if facts.bindings.get(name, facts.bindings.get(name.rsplit(".", 1)[-1])) is not Kind.ENGINE:
                continue  # only engines that deepspeed.initialize returns, not names that look like one
            yield Finding(event.span, f"{call_text(loop, event)} runs at a manual boundary, but the DeepSpeed engine "
                          "owns the window; step on every micro-batch", detail="A DeepSpeed engine counts every "
                          "backward as a micro-batch and owns the window itself (under ZeRO-2 a manual window keeps "
                          "only its last micro-batch); set `gradient_accumulation_steps` in the DeepSpeed config "
                          "and call backward and step on every micro-batch.")

    VALID = (
        """\
def train(model, loader, config):
    engine, optimizer, _, _ = deepspeed.initialize(model=model, config=config)
    for step, batch in enumerate(loader):
        loss = engine(batch)
        engine.backward(loss)
        engine.step()
""",
        """\
def train(model, loader, config, accum_steps):
    engine, optimizer, _, _ = deepspeed.initialize(model=model, config=config)
    for step, batch in enumerate(loader):
        boundary = (step + 1) % accum_steps == 0
        engine.set_gradient_accumulation_boundary(boundary)
        engine.backward(engine(batch))
        if boundary:
            engine.step()
""",
    )
    INVALID = (
        Invalid("""\
def train(model, loader, config, accum_steps):
    engine, optimizer, _, _ = deepspeed.initialize(model=model, config=config)
    for step, batch in enumerate(loader):
        loss = engine(batch) / accum_steps
        engine.backward(loss)
        if (step + 1) % accum_steps == 0:
            engine.step()
""", ((7, "GL406"),)),
    )
