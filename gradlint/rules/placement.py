"""GL101-GL104: update work placed in the micro-batch body of an accumulation window."""

from __future__ import annotations

from collections.abc import Iterator

from gradlint.diagnostics import Applicability, Severity
from gradlint.fixes import clip_to_boundary, scheduler_to_boundary, step_to_boundary, zero_grad_to_boundary
from gradlint.model.events import Role, TrainingLoop
from gradlint.rules.base import Finding, Rule, RuleInfo
from gradlint.rules.helpers import call_text, per_micro_batch, step_text


class ClipPerMicroBatch(Rule):
    info = RuleInfo("GL101", "clip-per-micro-batch", Severity.ERROR,
                    "Gradient clipping runs on every micro-batch of an accumulation window.",
                    fix=Applicability.SAFE)

    def check(self, loop: TrainingLoop) -> Iterator[Finding]:
        for event in per_micro_batch(loop, Role.CLIP):
            where = ("under `if accelerator.sync_gradients:`" if loop.in_accumulate(event)
                     else f"at the update boundary, just before {step_text(loop)}")
            yield Finding(event.span, f"{call_text(loop, event)} runs on every micro-batch of this "
                          f"accumulation window; clip once on the accumulated gradient, {where}",
                          clip_to_boundary(loop, event))


class StepPerMicroBatch(Rule):
    info = RuleInfo("GL102", "step-per-micro-batch", Severity.ERROR,
                    "The optimizer steps on every micro-batch, turning accumulation into N small updates.",
                    fix=Applicability.SAFE)

    def check(self, loop: TrainingLoop) -> Iterator[Finding]:
        for event in per_micro_batch(loop, Role.STEP):
            if loop.accelerate_skips(event):
                continue
            yield Finding(event.span, f"{call_text(loop, event)} runs on every micro-batch of this "
                          "accumulation window; step once per update, at the update boundary",
                          step_to_boundary(loop, event))


class ZeroGradPerMicroBatch(Rule):
    info = RuleInfo("GL103", "zero-grad-per-micro-batch", Severity.ERROR,
                    "Gradients are zeroed between backward calls of one window, keeping only the last micro-batch.",
                    fix=Applicability.UNSAFE)

    def check(self, loop: TrainingLoop) -> Iterator[Finding]:
        for event in per_micro_batch(loop, Role.ZERO_GRAD):
            if loop.accelerate_skips(event):
                continue
            yield Finding(event.span, f"{call_text(loop, event)} runs between backward calls of one "
                          "accumulation window and wipes the gradients accumulated so far; zero once per "
                          f"update, right after {step_text(loop)}", zero_grad_to_boundary(loop, event))


class SchedulerPerMicroBatch(Rule):
    info = RuleInfo("GL104", "scheduler-per-micro-batch", Severity.ERROR,
                    "The LR scheduler advances on every micro-batch, running warmup and decay N times too fast.",
                    fix=Applicability.UNSAFE)

    def check(self, loop: TrainingLoop) -> Iterator[Finding]:
        for event in per_micro_batch(loop, Role.SCHEDULER_STEP):
            if event.metric or loop.accelerate_skips(event):
                continue
            yield Finding(event.span, f"{call_text(loop, event)} advances the LR schedule on every "
                          "micro-batch (warmup and decay run N times too fast); step it once per update, "
                          f"right after {step_text(loop)}", scheduler_to_boundary(loop, event))
