"""The rule documents say which rules also have a runtime check, and ``gradlint rule`` prints it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from gradlint.runtime import CHECKS

RULES = Path(__file__).resolve().parent.parent / "rules"


@pytest.mark.parametrize("path", sorted(RULES.glob("GL*.md")), ids=lambda p: p.stem)
def test_a_rule_document_has_a_runtime_check_section_exactly_when_watch_reports_its_code(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    assert ("\n## Runtime check\n" in text) == (path.stem in CHECKS.values())
    if path.stem in CHECKS.values():
        section = text.split("\n## Runtime check\n", 1)[1]
        assert "\n## " not in section  # the last section of the document
        assert f'`.code == "{path.stem}"`' in section and "gradlint.runtime.watch" in section


def test_gradlint_rule_prints_the_runtime_check() -> None:
    result = subprocess.run([sys.executable, "-m", "gradlint", "rule", "GL305"], capture_output=True, text=True,
                            env={"COLUMNS": "200", "PATH": ""}, check=True)
    assert "Runtime check" in result.stdout
    assert "`optimizer.zero_grad()` after the window's last backward call and before its step." in result.stdout
