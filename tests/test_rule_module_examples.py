"""Each rule module's own examples: ``VALID`` sources give no finding of that rule, each
``INVALID`` source gives exactly its expected (line, code) findings, and where the example
states the fixed text, the rule's fix (unsafe fixes included) produces exactly it."""

from __future__ import annotations

import pytest

from gradlint.engine import lint_source
from gradlint.fixer import fix_source
from gradlint.rules import RULE_MODULES, RULES, rule_of
from gradlint.settings import Settings

MODULES = {module.__name__.rsplit(".", 1)[-1]: module for module in RULE_MODULES}
VALID = [(name, i) for name, module in MODULES.items() for i in range(len(rule_of(module).VALID))]
INVALID = [(name, i) for name, module in MODULES.items() for i in range(len(rule_of(module).INVALID))]


def _only(code: str) -> Settings:
    return Settings(select=frozenset({code}))


def test_every_rule_module_is_named_for_its_rule_and_has_examples() -> None:
    for name, module in MODULES.items():
        rule = rule_of(module)
        assert name == f"{rule.info.code.lower()}_{rule.info.name.replace('-', '_')}"
        assert rule.VALID and rule.INVALID, name
    assert [rule_of(m).info.code for m in RULE_MODULES] == list(RULES)


def test_every_fixable_rule_has_a_fixed_example() -> None:
    for module in RULE_MODULES:
        rule = rule_of(module)
        assert (rule.info.fix is not None) == any(e.fixed is not None for e in rule.INVALID), rule.info.code


@pytest.mark.parametrize(("name", "index"), VALID, ids=[f"{n}-{i}" for n, i in VALID])
def test_valid_example_gives_no_finding(name: str, index: int) -> None:
    rule = rule_of(MODULES[name])
    assert lint_source(rule.VALID[index], "valid.py", _only(rule.info.code)) == []


@pytest.mark.parametrize(("name", "index"), INVALID, ids=[f"{n}-{i}" for n, i in INVALID])
def test_invalid_example_gives_its_findings_and_fix(name: str, index: int) -> None:
    rule = rule_of(MODULES[name])
    example = rule.INVALID[index]
    settings = _only(rule.info.code)
    found = lint_source(example.source, "invalid.py", settings)
    assert [(d.line, d.code) for d in found] == list(example.expected)
    if example.fixed is None:
        return
    assert all(d.fix is not None and d.fix.applicability is rule.info.fix for d in found)
    result = fix_source(example.source, "invalid.py", settings, unsafe=True)
    assert result.text == example.fixed
    assert lint_source(result.text, "invalid.py", settings) == []
