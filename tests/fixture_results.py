"""Every fixture linted (once) and fixed per test session.

The whole-fixture tests (markers, fast path, fix properties, fix safety, the CLI run over a
copy of the tree) read these memoized results instead of each linting or fixing every fixture
again. The results are keyed on the text, so fixing a fixed text again (the fixpoint check) is
computed once too. Nothing here is mutated by the tests that read it.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path

from conftest import FIXTURES, ROOT

from gradlint.diagnostics import Diagnostic
from gradlint.engine import lint_bytes
from gradlint.fixer import FixResult, fix_source
from gradlint.catalogue import CATALOGUE
from gradlint.settings import Settings, default_settings

EVERY_RULE = Settings(select=frozenset(CATALOGUE))
"""Every rule on, GL900 (off by default) included."""


@dataclass(frozen=True)
class Fixture:
    """One fixture file: its path, the name it is linted under, its bytes and its text."""

    path: Path
    name: str
    data: bytes

    @property
    def text(self) -> str:
        return self.data.decode("utf-8")

    @property
    def id(self) -> str:
        """The test id: the path inside ``fixtures/``."""
        return self.path.relative_to(FIXTURES).as_posix()


@cache
def fixtures() -> tuple[Fixture, ...]:
    """Every ``.py`` fixture, sorted by path (notebooks and multi-module projects are tested apart)."""
    return tuple(Fixture(path, path.relative_to(ROOT).as_posix(), path.read_bytes())
                 for path in sorted(FIXTURES.rglob("*.py")) if path.relative_to(FIXTURES).parts[0] != "projects")


@cache
def every_rule(data: bytes, name: str) -> tuple[Diagnostic, ...]:
    """``data`` linted with every rule (GL900 included) by the fast path."""
    return tuple(lint_bytes(data, name, EVERY_RULE))


def diagnostics(fixture: Fixture) -> tuple[Diagnostic, ...]:
    """The fixture's diagnostics under the default settings: its every-rule lint without the
    rules that are off by default (so each fixture is linted once; ``tests/test_runner.py``
    checks that a default-settings run over every fixture reports exactly these)."""
    chosen = default_settings()
    return tuple(d for d in every_rule(fixture.data, fixture.name) if chosen.enabled(d.code))


def fixed(text: str, name: str, settings: Settings | None = None, unsafe: bool = True) -> FixResult:
    """``text`` with every fix applied (unsafe ones too when ``unsafe``); the default settings
    unless ``settings`` (the signature of ``fix_source``, for ``fixsafety.check_fix_safety``)."""
    return _fixed(text, name, settings or default_settings(), unsafe)


@cache
def _fixed(text: str, name: str, settings: Settings, unsafe: bool) -> FixResult:
    return fix_source(text, name, settings, unsafe=unsafe)
