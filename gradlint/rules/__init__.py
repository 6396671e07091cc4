"""The rule registry: every rule gradlint knows, by code.

``CATALOGUE`` (codes, names, severities) loads without libcst; ``RULES`` (the rule classes,
which need it) loads on first use, so a run answered from the cache never imports libcst.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from gradlint.rules.base import Finding, Rule, RuleInfo
from gradlint.rules.catalogue import CATALOGUE, SYNTAX_ERROR, UNUSED_SUPPRESSION

if TYPE_CHECKING:
    from gradlint.rules.registry import RULES


def __getattr__(name: str) -> Any:
    if name == "RULES":
        from gradlint.rules.registry import RULES

        return RULES
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["CATALOGUE", "RULES", "SYNTAX_ERROR", "UNUSED_SUPPRESSION", "Finding", "Rule", "RuleInfo"]
