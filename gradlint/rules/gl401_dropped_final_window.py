"""GL401 dropped-final-window: a counted gate with no final-window branch."""

from __future__ import annotations

from collections.abc import Iterator

from gradlint.catalogue import CATALOGUE
from gradlint.model.events import Shape, TrainingLoop
from gradlint.rules.base import Finding, Invalid, Rule


class DroppedFinalWindow(Rule):
    info = CATALOGUE["GL401"]

    def check(self, loop: TrainingLoop) -> Iterator[Finding]:
        gate = loop.primary_gate
        if gate is None or not loop.accumulating or not loop.iterates_loader or gate.final_branch:
            return
        if loop.shape is Shape.NESTED:
            return  # a gate inside the micro-batch loop closes each window on its last micro-batch
        if loop.tail_guarded or not loop.per_epoch:
            return  # a single pass (often over an endless stream) loses at most one tail
        if not gate.restarts_each_epoch:
            return  # a global counter over a possibly endless iterator: no epoch tail to lose
        if gate.modulus is None and gate.count_bound is None:
            return
        if gate.engine_window:
            return  # the engine owns the window; the gated calls do nothing
        yield Finding(gate.span, "this gate drops each epoch's last len(loader) % N micro-batches; also step on "
                      "the last batch", detail="The gate steps only after a full window, so the tail of each epoch "
                      "is dropped (or leaks into the next epoch's first update); also step on the last batch: "
                      "`or step + 1 == len(loader)`.")

    VALID = (
        """\
def train(model, loader, optimizer, accum_steps, epochs):
    for epoch in range(epochs):
        for step, (x, y) in enumerate(loader):
            (model(x, y) / accum_steps).backward()
            if (step + 1) % accum_steps == 0 or step + 1 == len(loader):
                optimizer.step()
                optimizer.zero_grad()
""",
    )
    INVALID = (
        Invalid("""\
def train(model, loader, optimizer, accum_steps, epochs):
    for epoch in range(epochs):
        for step, (x, y) in enumerate(loader):
            (model(x, y) / accum_steps).backward()
            if (step + 1) % accum_steps == 0:
                optimizer.step()
                optimizer.zero_grad()
""", ((5, "GL401"),)),
    )
