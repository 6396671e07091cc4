"""The catalogue and a cached run load without libcst; every catalogued rule has one class."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from gradlint.catalogue import CATALOGUE, RULE_INFOS, SYNTAX_ERROR, UNUSED_SUPPRESSION
from gradlint.rules import RULES

from conftest import ROOT
from samples import BAD


def test_every_catalogued_rule_has_one_class_in_code_order() -> None:
    assert [rule.info for rule in RULES.values()] == list(RULE_INFOS)
    assert all(rule.info is CATALOGUE[code] for code, rule in RULES.items())
    assert list(CATALOGUE) == [SYNTAX_ERROR.code, *sorted(RULES), UNUSED_SUPPRESSION.code]


def _loaded(code: str, *modules: str) -> list[str]:
    """Which of ``modules`` a fresh interpreter has loaded after running ``code``."""
    probe = f"import sys\n{code}\nprint('loaded:', *[m for m in {modules!r} if m in sys.modules])"
    result = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True)
    return result.stdout.rsplit("loaded:", 1)[1].split()


def test_the_catalogue_and_its_readers_load_without_libcst() -> None:
    readers = ("gradlint.catalogue", "gradlint.settings", "gradlint.suppression", "gradlint.screen",
               "gradlint.config", "gradlint.rule_docs", "gradlint.reporters.sarif", "gradlint.reporters.machine")
    code = "\n".join(f"import {module}" for module in readers)
    assert _loaded(code, "libcst", "gradlint.rules", "gradlint.model.events") == []


def test_the_command_line_loads_without_libcst_or_rich() -> None:
    assert _loaded("import gradlint.cli", "libcst", "rich", "gradlint.engine") == []
    assert _loaded("from gradlint.rules import RULES", "libcst") == ["libcst"]


def test_a_cached_json_check_loads_neither(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(BAD)
    run = ("from gradlint.cli import main\n"
           "try:\n    main(['check', '.', '--format', 'json', '--cache-dir', 'c'])\nexcept SystemExit:\n    pass")
    probe = f"import os\nos.chdir({str(tmp_path)!r})\n{run}"
    assert _loaded(probe, "libcst") == ["libcst"]  # the first run lints
    assert _loaded(probe, "libcst", "rich") == []  # the second is answered from the cache
