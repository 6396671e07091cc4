"""Rule documents: one per catalogue code, agreeing with the registry and the spec; ``gradlint rule``;
shipped inside the wheel."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from conftest import ROOT
from gradlint.rule_docs import docs_dir, load_doc
from gradlint.catalogue import CATALOGUE
from samples import gradlint

SECTIONS = ["What it does", "Why is this bad?", "Example", "Use instead", "Fix safety", "References"]
SPEC = Path(os.environ.get("GRADLINT_SPEC", "/work/shared/spec/RULES.md"))


def _fix(code: str) -> str:
    info = CATALOGUE[code]
    return info.fix.value if info.fix else "none"


def test_documents_are_read_from_the_repository_in_a_checkout() -> None:
    assert docs_dir() in (ROOT / "rules", ROOT / "gradlint" / "docs")


@pytest.mark.parametrize("code", list(CATALOGUE))
def test_every_rule_has_a_document_that_agrees_with_the_registry(code: str) -> None:
    doc = load_doc(code)
    assert doc is not None, f"rules/{code}.md is missing"
    info = CATALOGUE[code]
    assert (doc.code, doc.name, doc.severity, doc.fix) == (code, info.name, info.severity.value, _fix(code))
    titles = [title for title, _ in doc.sections]
    assert [t for t in SECTIONS if t in titles] == [t for t in titles if t in SECTIONS]
    missing = [t for t in SECTIONS if t not in titles and not (code == "GL000" and t == "Use instead")]
    assert not missing, f"{code}: missing sections {missing}"


@pytest.mark.skipif(not SPEC.is_file(), reason=f"the rule catalogue spec is not at {SPEC} (set GRADLINT_SPEC)")
def test_documents_agree_with_the_spec_table() -> None:
    rows = re.findall(r"^\| (GL\d{3}) \| ([a-z0-9-]+) \| (error|warning) \|", SPEC.read_text(), re.MULTILINE)
    assert rows
    for code, name, severity in rows:
        doc = load_doc(code)
        assert doc is not None, f"{code} is in the spec but has no document"
        assert (doc.name, doc.severity) == (name, severity), code
    assert {code for code, _, _ in rows} | {"GL000"} == set(CATALOGUE)


def test_rule_prints_the_rendered_document() -> None:
    result = gradlint("rule", "GL101")
    assert result.exit_code == 0
    assert "GL101: clip-per-micro-batch" in result.stdout
    assert "What it does" in result.stdout and "## What it does" not in result.stdout
    assert "torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)" in result.stdout
    assert gradlint("rule", "gl900").stdout == gradlint("rule", "GL900").stdout


def test_rule_json() -> None:
    data = json.loads(gradlint("rule", "GL104", "--format", "json").stdout)
    assert {k: data[k] for k in ("code", "name", "severity", "fix", "default")} == {
        "code": "GL104", "name": "scheduler-per-micro-batch", "severity": "error", "fix": "unsafe", "default": True}
    assert data["explanation"] == (ROOT / "rules" / "GL104.md").read_text(encoding="utf-8")


def test_rule_all_lists_every_rule() -> None:
    lines = gradlint("rule", "--all").stdout.splitlines()
    assert lines[0].split() == ["code", "name", "severity", "fix", "default"]
    assert [line.split() for line in lines[1:]] == [
        [code, info.name, info.severity.value, _fix(code), "on" if info.default else "off"]
        for code, info in CATALOGUE.items()]
    data = json.loads(gradlint("rule", "--all", "--format", "json").stdout)
    assert [(d["code"], d["fix"], d["default"]) for d in data] == [
        (code, _fix(code), info.default) for code, info in CATALOGUE.items()]
    assert data[-1]["code"] == "GL900" and data[-1]["default"] is False


@pytest.mark.parametrize(("args", "message"), [
    (("GL999",), "gradlint: error: unknown rule code 'GL999' (gradlint rule --all lists them)\n"),
    ((), "gradlint: error: give one rule code (gradlint rule GL101) or --all\n"),
    (("GL101", "--all"), "gradlint: error: give one rule code (gradlint rule GL101) or --all\n"),
])
def test_rule_usage_errors(args: tuple[str, ...], message: str) -> None:
    result = gradlint("rule", *args)
    assert (result.exit_code, result.stdout, result.stderr) == (2, "", message)


