"""Every rule's message is one short line (what is wrong and what to do, at most 120
characters, as in the ``text`` and ``concise`` formats); the longer explanation is its
``detail``, which the ``full`` format, JSON and SARIF show."""

from __future__ import annotations

import pytest

from fixture_results import EVERY_RULE, Fixture, every_rule, fixtures
from gradlint.catalogue import CATALOGUE
from gradlint.engine import lint_source
from gradlint.rules import RULES

LIMIT = 120
RULE_CODES = frozenset(code for code in CATALOGUE if code not in ("GL000", "GL900"))


def _checked(diagnostics: tuple, where: str) -> int:
    """Assert the message limits on ``diagnostics``; how many rule findings they hold."""
    found = 0
    for d in diagnostics:
        assert "\n" not in d.message, f"{where}:{d.line}: {d.code} message spans lines"
        assert len(d.message) <= LIMIT, f"{where}:{d.line}: {d.code} message is {len(d.message)} chars: {d.message}"
        if d.code in RULE_CODES:
            found += 1
            assert d.detail and d.detail.endswith("."), f"{where}:{d.line}: {d.code} has no detail sentence"
            assert d.detail != d.message
    return found


@pytest.mark.parametrize("fixture", fixtures(), ids=lambda f: f.id)
def test_fixture_messages_are_short(fixture: Fixture) -> None:
    _checked(every_rule(fixture.data, fixture.name), fixture.id)


def test_every_rule_was_seen_in_the_fixtures() -> None:
    """The limit above is tested on each rule's findings, not on a few of them."""
    codes = {d.code for f in fixtures() for d in every_rule(f.data, f.name)}
    assert RULE_CODES - codes == set()


@pytest.mark.parametrize("code", sorted(RULES))
def test_rule_example_messages_are_short(code: str) -> None:
    rule = RULES[code]
    found = sum(_checked(tuple(lint_source(example.source, "example.py", EVERY_RULE)), f"{code} INVALID")
                for example in rule.INVALID)
    assert found >= len(rule.INVALID)
