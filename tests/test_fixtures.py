"""Every fixture is reported on exactly its marked lines with exactly its marked codes."""

from __future__ import annotations

import pytest
from conftest import FIXTURES, expected_markers
from fixture_results import Fixture, diagnostics, every_rule, fixtures

from gradlint.catalogue import CATALOGUE
from gradlint.rules import RULES


def test_fixtures_exist() -> None:
    assert len(fixtures()) >= 30


@pytest.mark.parametrize("fixture", fixtures(), ids=lambda f: f.id)
def test_fixture_diagnostics_match_markers(fixture: Fixture) -> None:
    """With every rule on (GL900 too: no fixture holds an unused suppression), and with the
    default rules (the same, without the rules that are off by default: GL502)."""
    found = {(d.line, d.code) for d in every_rule(fixture.data, fixture.name)}
    assert found == expected_markers(fixture.text)
    assert {(d.line, d.code) for d in diagnostics(fixture)} == {(line, code) for line, code in found
                                                                  if CATALOGUE[code].default}


def test_each_rule_is_shown_in_three_fixtures() -> None:
    counts: dict[str, int] = {}
    for fixture in fixtures():
        for code in {code for _, code in expected_markers(fixture.text)}:
            counts[code] = counts.get(code, 0) + 1
    thin = {code: counts.get(code, 0) for code in RULES if counts.get(code, 0) < 3}
    assert not thin, f"rules shown in fewer than three fixtures: {thin}"


@pytest.mark.parametrize("fixture", fixtures(), ids=lambda f: f.id)
def test_fixtures_are_grouped_by_rule(fixture: Fixture) -> None:
    """``rules/glXXX/``: files whose main finding is GLXXX (at least one GLXXX marker), and
    their clean counterparts ``good_*.py``; ``idioms/<framework>/``: files that must stay clean."""
    group, folder, name = fixture.id.split("/")
    codes = {code for _, code in expected_markers(fixture.text)}
    if group == "rules":
        assert folder.upper() in RULES
        assert (folder.upper() in codes) if not name.startswith("good_") else not codes
    else:
        assert group == "idioms" and not codes


def test_notebooks_are_apart() -> None:
    assert sorted(p.relative_to(FIXTURES).as_posix() for p in FIXTURES.rglob("*") if p.is_file()
                  and p.suffix != ".py") == ["README.md", "notebooks/accumulation.ipynb"]
