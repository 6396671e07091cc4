"""GL306 scaler-created-in-loop: a GradScaler built again on every pass of the training loop."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from gradlint.catalogue import CATALOGUE
from gradlint.fixes import edits
from gradlint.fixes.layout import layout_of
from gradlint.fixes.regions import before
from gradlint.model.events import TrainingLoop
from gradlint.model.training_state import ScalerConstruction, scaler_constructions
from gradlint.rules.base import Change, Finding, Invalid, Rule


class ScalerCreatedInLoop(Rule):
    info = CATALOGUE["GL306"]

    def check(self, loop: TrainingLoop) -> Iterator[Finding]:
        for built in scaler_constructions(loop):
            text = loop.unit.text_of(built.call.func).strip()
            yield Finding(loop.unit.span(built.call),
                          f"{text}() is constructed inside the training loop; build it once before the loop",
                          self.fix(_hoist, loop, built), detail="Each new scaler restarts at the initial loss "
                          "scale with a fresh growth tracker, so fp16 training re-calibrates (and skips steps) at "
                          "every restart.")

    VALID = (
        """\
def train(model, loader, optimizer):
    scaler = torch.amp.GradScaler("cuda")
    for epoch in range(10):
        for x, y in loader:
            scaler.scale(model(x, y)).backward()
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad()
""",
        """\
def train(model, loader, optimizer):
    scaler = None
    for x, y in loader:
        if scaler is None:
            scaler = torch.amp.GradScaler("cuda")
        scaler.scale(model(x, y)).backward()
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad()
""",
    )
    INVALID = (
        Invalid("""\
def train(model, loader, optimizer):
    for epoch in range(10):
        scaler = torch.amp.GradScaler("cuda")
        for x, y in loader:
            scaler.scale(model(x, y)).backward()
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad()
""", ((3, "GL306"),), fixed="""\
def train(model, loader, optimizer):
    scaler = torch.amp.GradScaler("cuda")
    for epoch in range(10):
        for x, y in loader:
            scaler.scale(model(x, y)).backward()
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad()
"""),
        Invalid("""\
def train(model, loader, optimizer, scale):
    for step, (x, y) in enumerate(loader):
        scaler = torch.cuda.amp.GradScaler(init_scale=scale * (step + 1))
        scaler.scale(model(x, y)).backward()
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad()
""", ((3, "GL306"),)),
    )


def _hoist(loop: TrainingLoop, built: ScalerConstruction) -> Change | None:
    """Move ``scaler = GradScaler(...)`` to just above the outermost loop that repeats it,
    unless its arguments read a name that loop binds."""
    if built.reads_loop_names or built.statement is None or not isinstance(built.repeat, (cst.For, cst.While)):
        return None  # a per-batch function has no "before the loop" in its own unit
    layout = layout_of(loop.unit)
    block = layout.block_of(built.repeat)
    if block is None or not layout.sound:
        return None
    moved = edits.move_statements(loop, [built.statement], before(layout, built.repeat, block))
    return Change("Build the GradScaler once, before the loop", moved) if moved else None
