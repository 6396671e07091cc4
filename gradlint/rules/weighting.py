"""GL202-GL204: a loss divided by the wrong amount for its window."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from gradlint.catalogue import CATALOGUE
from gradlint.fixes import remove_division
from gradlint.model.events import Event, Role, TrainingLoop
from gradlint.model.loss import LossTrace, Scaling, trace_loss
from gradlint.rules.base import Finding, Rule
from gradlint.rules.helpers import per_micro_batch
from gradlint.rules.scaling import framework_divides

_TOKEN_LOSSES = ("cross_entropy", "crossentropy", "nll_loss", "criterion", "loss_fn", "lm_loss")
_ACCUMULATION_WORDS = ("accum", "grad_acc", "gas", "micro")
_TOKEN_COUNT_WORDS = ("token", "num_items", "valid", "numel", "ntok", "n_tok", "num_tgt", "mask")


def fixed_divisor(loop: TrainingLoop, trace: LossTrace) -> str | None:
    """The divisor's text when the loss is divided by the fixed accumulation factor."""
    factor = loop.factor_code()
    for divisor in trace.divisors:
        text = loop.unit.code(divisor).strip().strip("()")
        if isinstance(divisor, cst.Integer) and divisor.evaluated_value > 1:
            return text
        if text == factor and not loop.reassigns(text):
            return text
    return None


def _scaled_traces(loop: TrainingLoop) -> Iterator[tuple[Event, LossTrace]]:
    for event in per_micro_batch(loop, Role.BACKWARD):
        if framework_divides(loop, event):
            continue
        trace = trace_loss(event.unit, event.loss, event.span.line)
        if trace.scaling is Scaling.SCALED:
            yield event, trace


class FixedDivisorPartialWindow(Rule):
    info = CATALOGUE["GL202"]

    def check(self, loop: TrainingLoop) -> Iterator[Finding]:
        gate = loop.primary_gate
        if gate is None or not gate.final_branch:
            return
        for event, trace in _scaled_traces(loop):
            divisor = fixed_divisor(loop, trace)
            if divisor is None:
                continue
            yield Finding(event.span, f"the loss is divided by the fixed {divisor}, but the gate also steps on the "
                          "final, shorter window of the epoch, whose micro-batches are then under-weighted; "
                          "divide by the number of micro-batches actually in the window")


class MeanOfMeans(Rule):
    info = CATALOGUE["GL203"]

    def check(self, loop: TrainingLoop) -> Iterator[Finding]:
        for event, trace in _scaled_traces(loop):
            divisors = [loop.unit.code(d).strip() for d in trace.divisors]
            if not divisors or not _token_mean(loop, trace):
                continue
            if any(word in d.lower() for d in divisors for word in _TOKEN_COUNT_WORDS):
                continue  # already weighted by a count of valid tokens
            divisor = divisors[0].strip("()")
            yield Finding(event.span, f"a per-token mean loss is divided equally by {divisor}, so micro-batches with "
                          "few valid tokens weigh as much as full ones (a mean of means); compute the loss with "
                          "reduction=\"sum\" and divide by the window's total count of valid tokens")


def _token_mean(loop: TrainingLoop, trace: LossTrace) -> bool:
    """Evidence of a mean over masked tokens: ``ignore_index``, or a token loss in a
    module that masks labels with -100; never with ``reduction="sum"``."""
    codes = [loop.unit.code(call) for call in trace.origins]
    if any("reduction" in code for code in codes):
        return False
    if any("ignore_index" in code for code in codes):
        return True
    if not loop.unit.facts.token_masking:
        return False
    return trace.model_output or any(
        "labels" in code or any(w in code.lower() for w in _TOKEN_LOSSES) for code in codes
    )


class DoubleAccumulationScaling(Rule):
    info = CATALOGUE["GL204"]

    def check(self, loop: TrainingLoop) -> Iterator[Finding]:
        for event in loop.of(Role.BACKWARD):
            if not framework_divides(loop, event):
                continue
            trace = trace_loss(event.unit, event.loss, event.span.line)
            factor = loop.factor_code()
            divisors = [(loop.unit.code(d).strip().strip("()"), d) for d in trace.divisors]
            manual = [(d, node) for d, node in divisors
                      if d == factor or any(w in d.lower() for w in _ACCUMULATION_WORDS)]
            if not manual:
                continue
            owner = "DeepSpeed's engine.backward" if event.framework == "deepspeed" else (
                "accelerator.backward (Accelerator(gradient_accumulation_steps=...))")
            yield Finding(event.span, f"the loss is divided by {manual[0][0]} by hand, but {owner} already divides "
                          "it by the accumulation steps, so gradients end up N times too small; remove the "
                          "manual division", remove_division(loop, manual[0][1]))

