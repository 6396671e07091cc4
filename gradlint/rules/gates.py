"""GL401, GL403: counted gates that lose or shift micro-batches."""

from __future__ import annotations

from collections.abc import Iterator

from gradlint.catalogue import CATALOGUE
from gradlint.model.events import TrainingLoop
from gradlint.rules.base import Finding, Rule


class DroppedFinalWindow(Rule):
    info = CATALOGUE["GL401"]

    def check(self, loop: TrainingLoop) -> Iterator[Finding]:
        gate = loop.primary_gate
        if gate is None or not loop.accumulating or not loop.iterates_loader or gate.final_branch:
            return
        if loop.tail_guarded or not loop.per_epoch:
            return  # a single pass (often over an endless stream) loses at most one tail
        if not gate.restarts_each_epoch:
            return  # a global counter over a possibly endless iterator: no epoch tail to lose
        if gate.modulus is None and gate.count_bound is None:
            return
        yield Finding(gate.span, "this gate steps only after a full window, so the last len(loader) % N "
                      "micro-batches of each epoch are dropped (or leak into the next epoch's first update); "
                      "also step on the last batch: `or step + 1 == len(loader)`")


class OffByOneGate(Rule):
    info = CATALOGUE["GL403"]

    def check(self, loop: TrainingLoop) -> Iterator[Finding]:
        gate = loop.primary_gate
        if gate is None or gate.modulus is None or not gate.zero_based or not loop.accumulating:
            return
        counter = gate.counter
        yield Finding(gate.span, f"`{counter}` is 0 on the first micro-batch, so `{counter} % N == 0` steps "
                      "after a single micro-batch and every later window is shifted; test "
                      f"`({counter} + 1) % N == 0`")
