"""The catalogue and a cached run load without libcst; every catalogued rule has one class."""

from __future__ import annotations

import subprocess
import sys

from gradlint.rules import CATALOGUE, RULES, SYNTAX_ERROR, UNUSED_SUPPRESSION
from gradlint.rules.catalogue import RULE_INFOS

from conftest import ROOT


def test_every_catalogued_rule_has_one_class_in_code_order() -> None:
    assert [rule.info for rule in RULES.values()] == list(RULE_INFOS)
    assert all(rule.info is CATALOGUE[code] for code, rule in RULES.items())
    assert list(CATALOGUE) == [SYNTAX_ERROR.code, *sorted(RULES), UNUSED_SUPPRESSION.code]


def _loads_libcst(code: str) -> bool:
    probe = f"import sys\n{code}\nprint('libcst' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True)
    return result.stdout.strip() == "True"


def test_the_catalogue_and_settings_load_without_libcst() -> None:
    assert not _loads_libcst("import gradlint.rules, gradlint.config, gradlint.suppression, gradlint.cache")
    assert _loads_libcst("from gradlint.rules import RULES")
