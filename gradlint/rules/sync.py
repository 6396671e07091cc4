"""GL402: DistributedDataParallel accumulation that all-reduces every micro-batch."""

from __future__ import annotations

from collections.abc import Iterator

from gradlint.catalogue import CATALOGUE
from gradlint.model.events import Role, TrainingLoop
from gradlint.names import Kind
from gradlint.rules.base import Finding, Rule
from gradlint.rules.helpers import per_micro_batch


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
