"""The rule classes, one per catalogued code (importing them loads libcst)."""

from __future__ import annotations

from gradlint.rules.base import Rule
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
