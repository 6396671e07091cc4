"""The rule registry: every rule gradlint knows, by code."""

from __future__ import annotations

from gradlint.diagnostics import Severity
from gradlint.rules.base import Finding, Rule, RuleInfo
from gradlint.rules.ordering import ClipAfterStep
from gradlint.rules.placement import (
    ClipPerMicroBatch,
    SchedulerPerMicroBatch,
    StepPerMicroBatch,
    ZeroGradPerMicroBatch,
)
from gradlint.rules.scaling import MissingAccumulationScaling

SYNTAX_ERROR = RuleInfo("GL000", "syntax-error", Severity.ERROR,
                        "The file holds training-loop text but cannot be read or parsed.")

RULES: dict[str, Rule] = {
    rule.info.code: rule
    for rule in (
        ClipPerMicroBatch(),
        StepPerMicroBatch(),
        ZeroGradPerMicroBatch(),
        SchedulerPerMicroBatch(),
        MissingAccumulationScaling(),
        ClipAfterStep(),
    )
}

CATALOGUE: dict[str, RuleInfo] = {
    SYNTAX_ERROR.code: SYNTAX_ERROR,
    **{code: rule.info for code, rule in sorted(RULES.items())},
}

__all__ = ["CATALOGUE", "RULES", "SYNTAX_ERROR", "Finding", "Rule", "RuleInfo"]
