"""Shared test helpers: the fixtures folder, a linter with default settings, and the
hypothesis profiles ("ci" when the CI environment variable is set, else "dev")."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings as hypothesis_settings

from gradlint.engine import lint_source
from gradlint.settings import Settings, default_settings

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
EXAMPLES = 50
"""The example budget of a property test that does not set its own ``max_examples``."""

# "ci": the same examples on every run (a random failure on an unrelated change is a failed
# landing), no example database, and a failing example's blob printed to replay it.
hypothesis_settings.register_profile(
    "ci", derandomize=True, max_examples=EXAMPLES, deadline=None, print_blob=True, database=None,
    suppress_health_check=[HealthCheck.too_slow])
# "dev": random examples (the same budget), and the database in .hypothesis/ that tries a
# failure found once again; no deadline (the linter is slow on first use).
hypothesis_settings.register_profile("dev", hypothesis_settings.get_profile("default"), max_examples=EXAMPLES,
                                     deadline=None, print_blob=True)

def hypothesis_profile(environ: Mapping[str, str]) -> str:
    """"ci" when the CI environment variable is set (not to "", "0" or "false"), else "dev"."""
    return "ci" if environ.get("CI", "").lower() not in ("", "0", "false") else "dev"


PROFILE = hypothesis_profile(os.environ)
hypothesis_settings.load_profile(PROFILE)

_MARKER = re.compile(r"#\s*expect:\s*(GL\d{3}(?:\s*,\s*GL\d{3})*)")


def expected_markers(source: str) -> set[tuple[int, str]]:
    """``(line, code)`` pairs from trailing ``# expect: GL101`` comments."""
    found = set()
    for number, line in enumerate(source.splitlines(), start=1):
        match = _MARKER.search(line)
        if match:
            found |= {(number, code.strip()) for code in match.group(1).split(",")}
    return found


def lint(source: str, path: str = "example.py", settings: Settings | None = None) -> list[tuple[int, str]]:
    """``(line, code)`` of every diagnostic for ``source``."""
    return [(d.line, d.code) for d in lint_source(source, path, settings or default_settings())]


@pytest.fixture
def settings() -> Settings:
    return default_settings()
