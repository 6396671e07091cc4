"""GL101-GL104: update work placed in the micro-batch body of an accumulation window."""

from __future__ import annotations

from collections.abc import Iterator

from gradlint.catalogue import CATALOGUE
from gradlint.fixes import clip_to_boundary, scheduler_to_boundary, step_to_boundary, zero_grad_to_boundary
from gradlint.model.events import Role, TrainingLoop
from gradlint.rules.base import Finding, Rule
from gradlint.rules.helpers import call_text, per_micro_batch, step_text


class ClipPerMicroBatch(Rule):
    info = CATALOGUE["GL101"]

    def check(self, loop: TrainingLoop) -> Iterator[Finding]:
        for event in per_micro_batch(loop, Role.CLIP):
            where = ("under `if accelerator.sync_gradients:`" if loop.in_accumulate(event)
                     else f"at the update boundary, just before {step_text(loop)}")
            yield Finding(event.span, f"{call_text(loop, event)} runs on every micro-batch of this "
                          f"accumulation window; clip once on the accumulated gradient, {where}",
                          clip_to_boundary(loop, event))


class StepPerMicroBatch(Rule):
    info = CATALOGUE["GL102"]

    def check(self, loop: TrainingLoop) -> Iterator[Finding]:
        for event in per_micro_batch(loop, Role.STEP):
            if loop.accelerate_skips(event):
                continue
            yield Finding(event.span, f"{call_text(loop, event)} runs on every micro-batch of this "
                          "accumulation window; step once per update, at the update boundary",
                          step_to_boundary(loop, event))


class ZeroGradPerMicroBatch(Rule):
    info = CATALOGUE["GL103"]

    def check(self, loop: TrainingLoop) -> Iterator[Finding]:
        for event in per_micro_batch(loop, Role.ZERO_GRAD):
            if loop.accelerate_skips(event):
                continue
            yield Finding(event.span, f"{call_text(loop, event)} runs between backward calls of one "
                          "accumulation window and wipes the gradients accumulated so far; zero once per "
                          f"update, right after {step_text(loop)}", zero_grad_to_boundary(loop, event))


class SchedulerPerMicroBatch(Rule):
    info = CATALOGUE["GL104"]

    def check(self, loop: TrainingLoop) -> Iterator[Finding]:
        for event in per_micro_batch(loop, Role.SCHEDULER_STEP):
            if event.metric or loop.accelerate_skips(event):
                continue
            yield Finding(event.span, f"{call_text(loop, event)} advances the LR schedule on every "
                          "micro-batch (warmup and decay run N times too fast); step it once per update, "
                          f"right after {step_text(loop)}", scheduler_to_boundary(loop, event))
