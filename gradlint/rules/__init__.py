"""The rules: one class per catalogued code, each in its own module (importing them loads
libcst; the catalogue, :mod:`gradlint.catalogue`, does not)."""

from __future__ import annotations

from gradlint.rules.base import Finding, Rule
from gradlint.rules.registry import RULES

__all__ = ["RULES", "Finding", "Rule"]
