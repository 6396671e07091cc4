"""Shared test helpers: the fixtures folder and a linter with default settings."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from gradlint.engine import lint_source
from gradlint.settings import Settings, default_settings

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
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
