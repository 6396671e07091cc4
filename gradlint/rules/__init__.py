"""The rules: one module per catalogued code, each holding its rule class (the check and the
fix it offers) and its own ``VALID`` / ``INVALID`` examples. Importing them loads libcst;
the catalogue (:mod:`gradlint.catalogue`) does not."""

from __future__ import annotations

from types import ModuleType

from gradlint.rules import (
    gl101_clip_per_micro_batch,
    gl102_step_per_micro_batch,
    gl103_zero_grad_per_micro_batch,
    gl104_scheduler_per_micro_batch,
    gl105_counter_per_micro_batch,
    gl201_missing_accumulation_scaling,
    gl202_fixed_divisor_partial_window,
    gl203_mean_of_means,
    gl204_double_accumulation_scaling,
    gl205_loss_ignores_num_items,
    gl206_unguarded_valid_count,
    gl301_clip_after_step,
    gl302_scheduler_before_optimizer,
    gl303_clip_before_unscale,
    gl304_missing_zero_grad,
    gl305_zero_grad_before_step,
    gl306_scaler_created_in_loop,
    gl307_scaler_update_misplaced,
    gl401_dropped_final_window,
    gl402_unsynced_accumulation,
    gl403_off_by_one_gate,
    gl501_checkpoint_missing_state,
    gl502_batchnorm_under_accumulation,
)
from gradlint.rules.base import Finding, ModuleRule, Rule

RULE_MODULES: tuple[ModuleType, ...] = (
    gl101_clip_per_micro_batch,
    gl102_step_per_micro_batch,
    gl103_zero_grad_per_micro_batch,
    gl104_scheduler_per_micro_batch,
    gl105_counter_per_micro_batch,
    gl201_missing_accumulation_scaling,
    gl202_fixed_divisor_partial_window,
    gl203_mean_of_means,
    gl204_double_accumulation_scaling,
    gl205_loss_ignores_num_items,
    gl206_unguarded_valid_count,
    gl301_clip_after_step,
    gl302_scheduler_before_optimizer,
    gl303_clip_before_unscale,
    gl304_missing_zero_grad,
    gl305_zero_grad_before_step,
    gl306_scaler_created_in_loop,
    gl307_scaler_update_misplaced,
    gl401_dropped_final_window,
    gl402_unsynced_accumulation,
    gl403_off_by_one_gate,
    gl501_checkpoint_missing_state,
    gl502_batchnorm_under_accumulation,
)
"""Every rule module, in code order."""


def rule_of(module: ModuleType) -> Rule:
    """An instance of the one :class:`Rule` subclass ``module`` defines."""
    [rule] = [value for value in vars(module).values()
              if isinstance(value, type) and issubclass(value, Rule) and value.__module__ == module.__name__]
    return rule()


RULES: dict[str, Rule] = {rule.info.code: rule for rule in map(rule_of, RULE_MODULES)}
"""The rule of every catalogued training-loop code, in code order."""

MODULE_RULES: dict[str, ModuleRule] = {code: rule for code, rule in RULES.items() if isinstance(rule, ModuleRule)}
"""The rules that read a whole module (a framework's loss hook) rather than its loops."""

__all__ = ["MODULE_RULES", "RULES", "RULE_MODULES", "Finding", "ModuleRule", "Rule", "rule_of"]
