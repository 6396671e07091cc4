"""Severity ``info`` (advice, off unless selected) in every output format: SARIF ``note``, the
language server's ``Information``, GitHub's ``notice``, GitLab's ``info``, and the JSON and
JUnit formats carry the finding like any other."""

from __future__ import annotations

import io
import json

from lsprotocol import types

from gradlint.diagnostics import Diagnostic, Severity, Span
from gradlint.lsp.convert import lsp_diagnostic
from gradlint.reporters.ci import render_github, render_gitlab
from gradlint.reporters.junit import render_junit
from gradlint.reporters.sarif import sarif_log

ADVICE = Diagnostic("train.py", Span(3, 5, 3, 25), "GL502", "batchnorm-under-accumulation", Severity.INFO,
                    "BatchNorm statistics see one micro-batch")


def test_sarif_level_is_note() -> None:
    [result] = sarif_log([ADVICE])["runs"][0]["results"]
    assert (result["ruleId"], result["level"]) == ("GL502", "note")


def test_lsp_severity_is_information() -> None:
    lines = ["", "", "    nn.BatchNorm2d(64, eps=1e-5)", ""]
    assert lsp_diagnostic(ADVICE, lines, "utf-16", 1).severity is types.DiagnosticSeverity.Information


def test_github_annotation_is_a_notice() -> None:
    out = io.StringIO()
    render_github([ADVICE], out)
    assert out.getvalue().startswith("::notice file=train.py,line=3,col=5,endLine=3,endColumn=25,"
                                     "title=GL502 batchnorm-under-accumulation::")


def test_gitlab_severity_is_info() -> None:
    out = io.StringIO()
    render_gitlab([ADVICE], out)
    [issue] = json.loads(out.getvalue())
    assert (issue["check_name"], issue["severity"]) == ("GL502 batchnorm-under-accumulation", "info")


def test_junit_reports_the_finding() -> None:
    out = io.StringIO()
    render_junit([ADVICE], out)
    assert 'type="GL502"' in out.getvalue() and "BatchNorm statistics see one micro-batch" in out.getvalue()


def test_severity_round_trips_by_value() -> None:
    assert Severity("info") is Severity.INFO and Severity.INFO.value == "info"
