"""The rule catalogue: code, name, severity, summary, fix applicability, default selection
and document of every code gradlint reports.

It sits at the bottom of the import graph (it needs only :mod:`gradlint.diagnostics`), so
settings, suppressions, the screen, reporters, the language server and a run answered from
the cache read it without loading libcst. Each rule class takes its ``info`` from here, and
its fix takes the applicability stated here.
"""

from __future__ import annotations

from dataclasses import dataclass

from gradlint.diagnostics import Applicability, Severity


@dataclass(frozen=True)
class RuleInfo:
    """A rule's catalogue entry."""

    code: str
    name: str
    severity: Severity
    summary: str
    fix: Applicability | None = None  # the applicability of the fix the rule offers, if any
    default: bool = True  # selected when the configuration names no rules

    @property
    def doc(self) -> str:
        """The file name of the rule's document (``GL101.md``) in the rule-docs folder."""
        return f"{self.code}.md"


SYNTAX_ERROR = RuleInfo("GL000", "syntax-error", Severity.ERROR,
                        "The file holds training-loop text but cannot be read or parsed.")
UNUSED_SUPPRESSION = RuleInfo("GL900", "unused-suppression", Severity.WARNING,
                              "A suppression comment that suppresses nothing.", default=False)

RULE_INFOS: tuple[RuleInfo, ...] = (
    RuleInfo("GL101", "clip-per-micro-batch", Severity.ERROR,
             "Gradient clipping runs on every micro-batch of an accumulation window.",
             fix=Applicability.SAFE),
    RuleInfo("GL102", "step-per-micro-batch", Severity.ERROR,
             "The optimizer steps on every micro-batch, turning accumulation into N small updates.",
             fix=Applicability.SAFE),
    RuleInfo("GL103", "zero-grad-per-micro-batch", Severity.ERROR,
             "Gradients are zeroed between backward calls of one window, keeping only the last micro-batch.",
             fix=Applicability.UNSAFE),
    RuleInfo("GL104", "scheduler-per-micro-batch", Severity.ERROR,
             "The LR scheduler advances on every micro-batch, running warmup and decay N times too fast.",
             fix=Applicability.UNSAFE),
    RuleInfo("GL105", "counter-per-micro-batch", Severity.WARNING,
             "A step counter advances per micro-batch and then drives eval, checkpoint, logging or LR cadence."),
    RuleInfo("GL106", "schedule-length-in-micro-batches", Severity.WARNING,
             "An LR schedule sized in micro-batches is stepped once per update, so it runs 1/N of its course.",
             fix=Applicability.UNSAFE),
    RuleInfo("GL107", "epoch-schedule-stepped-per-batch", Severity.WARNING,
             "A scheduler whose length is counted in epochs is stepped inside the batch loop.",
             fix=Applicability.UNSAFE),
    RuleInfo("GL109", "optimizer-step-in-backward-hook", Severity.ERROR,
             "An optimizer step registered to run inside backward, in code that accumulates gradients."),
    RuleInfo("GL201", "missing-accumulation-scaling", Severity.ERROR,
             "The loss of an accumulation window is not divided by N (gradient and effective LR scaled by N).",
             fix=Applicability.UNSAFE),
    RuleInfo("GL202", "fixed-divisor-partial-window", Severity.WARNING,
             "The loss is divided by a fixed N while the loop also steps on a shorter final window."),
    RuleInfo("GL203", "mean-of-means", Severity.WARNING,
             "Per-token mean losses of micro-batches with unequal valid counts are averaged with equal weight."),
    RuleInfo("GL204", "double-accumulation-scaling", Severity.ERROR,
             "A manual 1/N where the framework already divides the loss by N.",
             fix=Applicability.UNSAFE),
    RuleInfo("GL205", "loss-ignores-num-items", Severity.WARNING,
             "An HF Trainer's compute_loss ignores num_items_in_batch, so the gradient is N times too large."),
    RuleInfo("GL206", "unguarded-valid-count", Severity.WARNING,
             "A training loss is divided by a count of valid targets with no guard against zero.",
             fix=Applicability.UNSAFE),
    RuleInfo("GL301", "clip-after-step", Severity.ERROR,
             "Gradients are clipped after the optimizer step of the same update.",
             fix=Applicability.SAFE),
    RuleInfo("GL302", "scheduler-before-optimizer", Severity.WARNING,
             "The LR scheduler is advanced before the optimizer step of the same update.",
             fix=Applicability.SAFE),
    RuleInfo("GL303", "clip-before-unscale", Severity.ERROR,
             "Under a GradScaler, gradients are clipped while still scaled (no unscale_ before the clip).",
             fix=Applicability.SAFE),
    RuleInfo("GL304", "missing-zero-grad", Severity.ERROR,
             "A loop runs backward and step but never zeroes gradients, so they accumulate forever."),
    RuleInfo("GL305", "zero-grad-before-step", Severity.ERROR,
             "zero_grad runs between the last backward and the step of the same update.",
             fix=Applicability.UNSAFE),
    RuleInfo("GL306", "scaler-created-in-loop", Severity.ERROR,
             "A GradScaler is constructed inside the training loop, restarting its loss scale each time.",
             fix=Applicability.UNSAFE),
    RuleInfo("GL307", "scaler-update-misplaced", Severity.ERROR,
             "scaler.update() runs per micro-batch, or never, in a loop that calls scaler.step.",
             fix=Applicability.SAFE),
    RuleInfo("GL401", "dropped-final-window", Severity.WARNING,
             "A counted gate has no final-window branch: the epoch's tail micro-batches are lost or leak."),
    RuleInfo("GL402", "unsynced-accumulation", Severity.WARNING,
             "DDP accumulation without no_sync(): an all-reduce on every micro-batch."),
    RuleInfo("GL403", "off-by-one-gate", Severity.WARNING,
             "A 0-based counter gated with `% N == 0` steps after the first micro-batch."),
    RuleInfo("GL404", "sync-guard-misses-forward", Severity.WARNING,
             "A DDP sync guard covers the backward but not the forward, so every micro-batch still synchronises.",
             fix=Applicability.UNSAFE),
    RuleInfo("GL405", "sync-on-wrong-micro-batch", Severity.ERROR,
             "A DDP sync guard's condition is inverted or off by one: the boundary backward skips the all-reduce."),
    RuleInfo("GL406", "deepspeed-manual-accumulation", Severity.ERROR,
             "A DeepSpeed engine is stepped under a manual accumulation gate instead of owning the window."),
    RuleInfo("GL407", "sampler-epoch-not-set", Severity.WARNING,
             "A DistributedSampler's epoch is never set, so every epoch sees the same sample order.",
             fix=Applicability.SAFE),
    RuleInfo("GL501", "checkpoint-missing-state", Severity.WARNING,
             "A checkpoint or resume keeps the optimizer's state but not the scheduler or GradScaler it steps.",
             fix=Applicability.UNSAFE),
    RuleInfo("GL502", "batchnorm-under-accumulation", Severity.INFO,
             "A model with BatchNorm layers is trained with gradient accumulation (statistics per micro-batch).",
             default=False),
)
"""The rules that check training loops, in code order."""

CATALOGUE: dict[str, RuleInfo] = {
    SYNTAX_ERROR.code: SYNTAX_ERROR,
    **{info.code: info for info in RULE_INFOS},
    UNUSED_SUPPRESSION.code: UNUSED_SUPPRESSION,
}
"""Every code gradlint reports, GL000 first and GL900 last."""
