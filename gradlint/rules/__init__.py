"""The rule registry: every rule gradlint knows, by code."""

from __future__ import annotations

from gradlint.diagnostics import Severity
from gradlint.rules.base import Finding, Rule, RuleInfo
from gradlint.rules.counters import CounterPerMicroBatch
from gradlint.rules.gates import DroppedFinalWindow, OffByOneGate
from gradlint.rules.ordering import ClipAfterStep
from gradlint.rules.placement import (
    ClipPerMicroBatch,
    SchedulerPerMicroBatch,
    StepPerMicroBatch,
    ZeroGradPerMicroBatch,
)
from gradlint.rules.scaling import MissingAccumulationScaling
from gradlint.rules.sync import UnsyncedAccumulation
from gradlint.rules.update_order import (
    ClipBeforeUnscale,
    MissingZeroGrad,
    SchedulerBeforeOptimizer,
    ZeroGradBeforeStep,
)
from gradlint.rules.weighting import DoubleAccumulationScaling, FixedDivisorPartialWindow, MeanOfMeans

SYNTAX_ERROR = RuleInfo("GL000", "syntax-error", Severity.ERROR,
                        "The file holds training-loop text but cannot be read or parsed.")
UNUSED_SUPPRESSION = RuleInfo("GL900", "unused-suppression", Severity.WARNING,
                              "A suppression comment that suppresses nothing.", default=False)

RULES: dict[str, Rule] = {
    rule.info.code: rule
    for rule in (
        ClipPerMicroBatch(),
        StepPerMicroBatch(),
        ZeroGradPerMicroBatch(),
        SchedulerPerMicroBatch(),
        CounterPerMicroBatch(),
        MissingAccumulationScaling(),
        FixedDivisorPartialWindow(),
        MeanOfMeans(),
        DoubleAccumulationScaling(),
        ClipAfterStep(),
        SchedulerBeforeOptimizer(),
        ClipBeforeUnscale(),
        MissingZeroGrad(),
        ZeroGradBeforeStep(),
        DroppedFinalWindow(),
        UnsyncedAccumulation(),
        OffByOneGate(),
    )
}

CATALOGUE: dict[str, RuleInfo] = {
    SYNTAX_ERROR.code: SYNTAX_ERROR,
    **{code: rule.info for code, rule in sorted(RULES.items())},
    UNUSED_SUPPRESSION.code: UNUSED_SUPPRESSION,
}

__all__ = ["CATALOGUE", "RULES", "SYNTAX_ERROR", "UNUSED_SUPPRESSION", "Finding", "Rule", "RuleInfo"]
