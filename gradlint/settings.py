"""Effective settings for one run: which rules, and extra names for training objects."""

from __future__ import annotations

from dataclasses import dataclass

from gradlint.catalogue import CATALOGUE
from gradlint.names import Kind


class SettingsError(ValueError):
    """Bad configuration or command-line selection (reported in one line, exit 2)."""


@dataclass(frozen=True)
class Settings:
    """Settings the core needs; hashable so the cache can key on them."""

    select: frozenset[str] = frozenset()
    extra_names: tuple[tuple[str, Kind], ...] = ()
    ignore_noqa: bool = False  # --ignore-noqa: suppression comments suppress nothing
    target_version: tuple[int, int] | None = None  # --target-version: the Python the code is written for

    @property
    def names(self) -> dict[str, Kind]:
        """Extra receiver names from configuration."""
        return dict(self.extra_names)

    def enabled(self, code: str) -> bool:
        """Whether a rule code is reported."""
        return code in self.select


def resolve_selection(catalogue: dict, select: list[str] | None, ignore: list[str] | None,
                      extend_select: list[str] | None = None) -> frozenset[str]:
    """Turn select / ignore lists (codes or prefixes like ``GL1``, ``ALL``) into codes."""
    defaults = {code for code, info in catalogue.items() if info.default}
    chosen = expand_codes(catalogue, select) if select else set(defaults)
    chosen |= expand_codes(catalogue, extend_select or [])
    chosen -= expand_codes(catalogue, ignore or [])
    return frozenset(chosen)


def expand_codes(catalogue: dict, codes: list[str]) -> set[str]:
    """The catalogue codes that ``codes`` (codes, prefixes or ``ALL``) name; unknown ones raise."""
    found: set[str] = set()
    for raw in codes:
        code = raw.strip().upper()
        if not code:
            continue
        matches = set(catalogue) if code == "ALL" else {c for c in catalogue if c.startswith(code)}
        if not matches or not code.startswith(("GL", "ALL")):
            raise SettingsError(f"unknown rule code or prefix: {raw.strip()!r}")
        found |= matches
    return found


def default_settings() -> Settings:
    """Every rule that is on by default, no extra names."""
    return Settings(select=resolve_selection(CATALOGUE, None, None))
