"""GL402 unsynced-accumulation: DDP accumulation that all-reduces every micro-batch."""

from __future__ import annotations

from collections.abc import Iterator

from gradlint.catalogue import CATALOGUE
from gradlint.model.events import Role, TrainingLoop
from gradlint.names import Kind
from gradlint.rules.base import Finding, Invalid, Rule
from gradlint.rules.readers import per_micro_batch


class UnsyncedAccumulation(Rule):
    info = CATALOGUE["GL402"]

    def check(self, loop: TrainingLoop) -> Iterator[Finding]:
        if Kind.DDP_MODEL not in loop.unit.facts.bindings.values() or loop.sync_controlled:
            return
        for event in per_micro_batch(loop, Role.BACKWARD):
            if event.no_sync or event.framework in ("accelerate", "fabric", "deepspeed"):
                continue
            yield Finding(event.span, "this backward runs in a DistributedDataParallel accumulation window "
                          "outside model.no_sync(), so gradients are all-reduced on every micro-batch; run the "
                          "forward and backward of all but the last micro-batch under `with model.no_sync():`")

    VALID = (
        """\
def train(model, loader, optimizer, accum_steps):
    model = DistributedDataParallel(model)
    for step, (x, y) in enumerate(loader):
        if (step + 1) % accum_steps != 0:
            with model.no_sync():
                (model(x, y) / accum_steps).backward()
            continue
        (model(x, y) / accum_steps).backward()
        optimizer.step()
        optimizer.zero_grad()
""",
    )
    INVALID = (
        Invalid("""\
def train(model, loader, optimizer, accum_steps):
    model = DistributedDataParallel(model)
    for step, (x, y) in enumerate(loader):
        (model(x, y) / accum_steps).backward()
        if (step + 1) % accum_steps == 0:
            optimizer.step()
            optimizer.zero_grad()
""", ((4, "GL402"),)),
    )
