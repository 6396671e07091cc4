"""GL105: a step counter advanced per micro-batch and then used for cadence."""

from __future__ import annotations

import re
from collections.abc import Iterator

from gradlint.catalogue import CATALOGUE
from gradlint.model.events import Role, TrainingLoop
from gradlint.rules.base import Finding, Rule
from gradlint.rules.helpers import per_micro_batch

_STEP_COUNTER = re.compile(r"step|update|iter|^it$|^itr$", re.I)
_MICRO_COUNTER = re.compile(r"micro|accum|batch|sample|token|seen", re.I)


class CounterPerMicroBatch(Rule):
    info = CATALOGUE["GL105"]

    def check(self, loop: TrainingLoop) -> Iterator[Finding]:
        gate_counters = {g.counter for g in loop.gates}
        for event in per_micro_batch(loop, Role.COUNTER):
            name = event.receiver or ""
            last = name.rsplit(".", 1)[-1]
            if name in gate_counters or not _STEP_COUNTER.search(last) or _MICRO_COUNTER.search(last):
                continue
            if name not in loop.cadence_names:
                continue
            yield Finding(event.span, f"`{name}` advances on every micro-batch but is used as an optimizer-step "
                          "count (eval, checkpoint, logging or LR cadence run N times too often); "
                          "increment it once per update, at the update boundary")
