"""Every fixture is reported on exactly its marked lines with exactly its marked codes."""

from __future__ import annotations

import pytest

from conftest import FIXTURES, ROOT, expected_markers, lint

FILES = sorted(FIXTURES.rglob("*.py"))


def test_fixtures_exist() -> None:
    assert len(FILES) >= 30


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_fixture_diagnostics_match_markers(path) -> None:
    source = path.read_text(encoding="utf-8")
    found = set(lint(source, str(path.relative_to(ROOT))))
    assert found == expected_markers(source)


def test_each_rule_is_shown_in_three_fixtures() -> None:
    counts: dict[str, int] = {}
    for path in FILES:
        for code in {code for _, code in expected_markers(path.read_text(encoding="utf-8"))}:
            counts[code] = counts.get(code, 0) + 1
    from gradlint.rules import RULES

    thin = {code: counts.get(code, 0) for code in RULES if counts.get(code, 0) < 3}
    assert not thin, f"rules shown in fewer than three fixtures: {thin}"
