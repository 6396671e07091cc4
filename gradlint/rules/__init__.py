"""The rules: one module per catalogued code, each holding its rule class (the check and the
fix it offers) and its own ``VALID`` / ``INVALID`` examples. Importing them loads libcst;
the catalogue (:mod:`gradlint.catalogue`) does not."""

from __future__ import annotations

import importlib
from types import ModuleType

from gradlint.catalogue import RULE_INFOS, RuleInfo
from gradlint.rules.base import Finding, ModuleRule, Rule


def module_name(info: RuleInfo) -> str:
    """The module of a catalogued rule: ``GL101`` ``clip-per-micro-batch`` is
    ``gradlint.rules.gl101_clip_per_micro_batch``."""
    return f"gradlint.rules.{info.code.lower()}_{info.name.replace('-', '_')}"


RULE_MODULES: tuple[ModuleType, ...] = tuple(importlib.import_module(module_name(info)) for info in RULE_INFOS)
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

__all__ = ["MODULE_RULES", "RULES", "RULE_MODULES", "Finding", "ModuleRule", "Rule", "module_name", "rule_of"]
