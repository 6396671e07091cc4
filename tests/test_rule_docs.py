"""Rule documents: one per catalogue code, agreeing with the registry and the spec; ``gradlint rule``;
shipped inside the wheel."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from conftest import ROOT
from gradlint.rule_docs import docs_dir, load_doc
from gradlint.catalogue import CATALOGUE
from samples import gradlint

SECTIONS = ["What it does", "Why is this bad?", "Example", "Use instead", "Fix safety", "References"]
SPEC = Path(os.environ.get("GRADLINT_SPEC", ROOT.parent / "shared" / "spec" / "RULES.md"))
"""The rule catalogue specification, beside the project (``../shared/spec/RULES.md``)."""
SPEC_ROW = re.compile(r"^\| (GL\d{3}) \| ([a-z0-9-]+) \| (error|warning|info) \|", re.MULTILINE)
SECOND_TABLE = "Catalogue II"
# Specified in the spec's "Catalogue II" table, not implemented yet: this set must equal the spec's
# codes minus the implemented ones, so it fails when either side moves.
NOT_IMPLEMENTED_YET: set[str] = set()


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


def _spec_rows() -> tuple[list[tuple[str, str, str]], list[tuple[str, str, str]]]:
    """``(code, name, severity)`` rows of the spec's first table and of its "Catalogue II" table."""
    assert SPEC.is_file(), f"the rule catalogue spec is not at {SPEC} (set GRADLINT_SPEC to its path)"
    text = SPEC.read_text(encoding="utf-8")
    assert text.count(SECOND_TABLE) == 1, f"the spec has no single {SECOND_TABLE!r} table"
    first, second = text.split(SECOND_TABLE)
    return SPEC_ROW.findall(first), SPEC_ROW.findall(second)


def test_the_spec_has_both_tables() -> None:
    first, second = _spec_rows()
    assert ("GL101", "clip-per-micro-batch", "error") in first and ("GL900", "unused-suppression", "warning") in first
    assert ("GL106", "schedule-length-in-micro-batches", "warning") in second
    assert ("GL502", "batchnorm-under-accumulation", "info") in second
    codes = [code for code, _, _ in first + second]
    assert len(codes) == len(set(codes)), "a code is specified twice"


def test_documents_agree_with_the_spec_table() -> None:
    """Every implemented code agrees with its spec row and its document; the codes the spec
    names that are not implemented yet are exactly ``NOT_IMPLEMENTED_YET``."""
    first, second = _spec_rows()
    spec = {code: (name, severity) for code, name, severity in first + second}
    implemented = set(CATALOGUE) - {"GL000"}  # GL000 (syntax-error) is described in the spec's text, not its tables
    assert spec.keys() - implemented == NOT_IMPLEMENTED_YET
    assert implemented <= spec.keys(), f"implemented but not specified: {sorted(implemented - spec.keys())}"
    assert {code for code, _, _ in first} <= implemented, "a rule of the first table is not implemented"
    for code in sorted(implemented):
        doc = load_doc(code)
        assert doc is not None, f"{code} is implemented but has no document"
        info = CATALOGUE[code]
        assert (info.name, info.severity.value) == spec[code], code
        assert (doc.name, doc.severity) == spec[code], code


def test_rule_prints_the_markdown_document_when_piped() -> None:
    """Piped, the document is printed as written: links and inline code survive."""
    result = gradlint("rule", "GL101")
    assert result.exit_code == 0
    assert result.stdout == (ROOT / "rules" / "GL101.md").read_text(encoding="utf-8").rstrip("\n") + "\n"
    assert "## What it does" in result.stdout and "`" in result.stdout
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


