"""Fuzzing (bounded): valid programs, programs with training calls grafted in, and mutated
training scripts never make the core or the fixer raise, GL000 appears exactly for what
Python rejects, and fixed code always parses. Every crash fuzzing found is a file in
``tests/regressions/`` (see its README) checked here. The long run is ``scripts/fuzz.py``."""

from __future__ import annotations

from pathlib import Path

import pytest
from fuzzing import (
    EVERY_RULE,
    check_program,
    grafted_programs,
    mutated_scripts,
    valid_programs,
)
from hypothesis import HealthCheck, given, settings

from gradlint.engine import lint_bytes, lint_source
from gradlint.fixer import fix_source
from gradlint.settings import Settings, default_settings

REGRESSIONS = Path(__file__).resolve().parent / "regressions"
# hypothesmith compiles the odd programs it generates ("'str' object is not callable")
pytestmark = pytest.mark.filterwarnings("ignore::SyntaxWarning")
BOUNDED = settings(deadline=None, database=None, suppress_health_check=list(HealthCheck))
"""The profile's example budget (tests/conftest.py), no database, no health checks."""


def _regression(name: str) -> str:
    return (REGRESSIONS / name).read_bytes().decode("utf-8")


@pytest.mark.parametrize("path", sorted(REGRESSIONS.glob("*.txt")), ids=lambda p: p.stem)
def test_every_regression_holds_the_invariants(path: Path) -> None:
    data = path.read_bytes()
    lint_bytes(data, path.name, EVERY_RULE)
    check_program(data.decode("utf-8"), path.name)


def test_a_lone_carriage_return_numbers_lines_like_python() -> None:
    """A lone "\\r" ends a line for Python: the loop after it was mis-sliced (IndexError in
    libcst's module body, or a silent miss) and fixes landed on the wrong line."""
    text = _regression("lone-carriage-return.txt")
    found = lint_source(text, "train.py", default_settings())
    assert [(d.line, d.column, d.code) for d in found] == [(11, 13, "GL101")]
    fixed = fix_source(text, "train.py", default_settings())
    assert fixed.text == text.replace(
        "            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n        optimizer.step()\n",
        "        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n        optimizer.step()\n")


def test_a_lone_carriage_return_keeps_noqa_on_its_python_line() -> None:
    text = _regression("lone-carriage-return.txt").replace("1.0)\n", "1.0)  # noqa: GL101\n")
    assert lint_source(text, "train.py", default_settings()) == []


def test_a_lone_carriage_return_inside_a_unit_leaves_it_without_a_fix() -> None:
    """The fix builders read the unit's lines split on "\\n" while positions count a lone
    "\\r": IndexError building GL103's fix. Such a unit gets its finding, without a fix."""
    text = _regression("lone-carriage-return-in-a-unit.txt")
    found = lint_source(text, "train.py", default_settings())
    assert [(d.line, d.column, d.code, d.fix) for d in found] == [(4, 13, "GL103", None)]


def test_no_unused_suppression_is_reported_in_a_file_that_does_not_parse() -> None:
    text = _regression("gl900-on-unparseable-file.txt")
    assert lint_source(text, "broken.py", EVERY_RULE) == []
    assert [d.code for d in lint_source(text, "broken.py", EVERY_RULE, full=True)] == ["GL000"]
    gl900 = Settings(select=frozenset({"GL900"}))
    assert lint_source(text.replace("\tif True:\n", ""), "ok.py", gl900)[0].code == "GL900"


@settings(BOUNDED)
@given(valid_programs())
def test_valid_programs(text: str) -> None:
    check_program(text)


@settings(BOUNDED)
@given(grafted_programs())
def test_valid_programs_with_training_calls_grafted_in(text: str) -> None:
    check_program(text)


@settings(BOUNDED, max_examples=max(10, settings.default.max_examples // 3))  # each lints and fixes a script
@given(mutated_scripts())
def test_mutated_training_scripts(text: str) -> None:
    check_program(text)
