"""The public API that ``gradlint/__init__.py`` states: light to import, usable as documented."""

from __future__ import annotations

import subprocess
import sys

import gradlint
from conftest import ROOT
from samples import BAD


def test_the_public_names_are_exactly_the_stated_api() -> None:
    assert sorted(gradlint.__all__) == sorted(
        ["Applicability", "Diagnostic", "Edit", "Fix", "Settings", "SettingsError", "Severity", "Span",
         "__version__", "default_settings", "lint_source"])
    assert all(hasattr(gradlint, name) for name in gradlint.__all__)


def test_importing_gradlint_loads_no_analysis() -> None:
    probe = "import sys, gradlint\nprint('libcst' in sys.modules, 'gradlint.engine' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True)
    assert result.stdout.split() == ["False", "False"]


def test_lint_source_with_default_settings() -> None:
    found = gradlint.lint_source(BAD, "train.py")
    assert [(d.path, d.line, d.column, d.code) for d in found] == [("train.py", 12, 13, "GL101"),
                                                                   ("train.py", 13, 13, "GL104")]
    assert found == gradlint.lint_source(BAD, "train.py", gradlint.default_settings())
    assert gradlint.lint_source(BAD, "train.py", gradlint.Settings(select=frozenset())) == []
