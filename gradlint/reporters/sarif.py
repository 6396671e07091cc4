"""SARIF 2.1.0 (GitHub code scanning): rule metadata with help from the rule documents, results,
and fixes as artifact changes."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, TextIO
from urllib.parse import quote

from gradlint import __version__
from gradlint.catalogue import CATALOGUE, RuleInfo
from gradlint.diagnostics import Diagnostic, Edit, Severity, Span
from gradlint.rule_docs import load_doc

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
INFORMATION_URI = "https://pypi.org/project/torch-gradlint/"
_LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}


def _rule(info: RuleInfo) -> dict[str, Any]:
    doc = load_doc(info.code)
    rule: dict[str, Any] = {
        "id": info.code,
        "name": info.name,
        "shortDescription": {"text": info.summary},
        "defaultConfiguration": {"level": _LEVEL[info.severity], "enabled": info.default},
        "properties": {"fix": info.fix.value if info.fix else "none", "tags": ["pytorch", "training-loop"]},
    }
    if doc is not None:
        what = doc.section("What it does")
        if what:
            rule["fullDescription"] = {"text": what}
        rule["help"] = {"text": doc.markdown, "markdown": doc.markdown}
    return rule


def _region(span: Span) -> dict[str, int]:
    return {"startLine": span.line, "startColumn": span.column, "endLine": span.end_line,
            "endColumn": max(span.end_column, 1)}


def _replacement(edit: Edit) -> dict[str, Any]:
    return {"deletedRegion": _region(edit.span), "insertedContent": {"text": edit.content}}


def _result(diagnostic: Diagnostic, index: int | None) -> dict[str, Any]:
    artifact = {"uri": quote(os.fsencode(diagnostic.path)), "uriBaseId": "%SRCROOT%"}
    message = diagnostic.message if diagnostic.cell is None else f"cell {diagnostic.cell}: {diagnostic.message}"
    result: dict[str, Any] = {
        "ruleId": diagnostic.code,
        "level": _LEVEL[diagnostic.severity],
        "message": {"text": message, **({"markdown": f"{message}\n\n{diagnostic.detail}"} if diagnostic.detail else {})},
        "locations": [{"physicalLocation": {"artifactLocation": artifact, "region": _region(diagnostic.span)}}],
    }
    if index is not None:
        result["ruleIndex"] = index
    if diagnostic.cell is not None:
        result["properties"] = {"cell": diagnostic.cell}
    elif diagnostic.fix is not None and diagnostic.fix.edits:
        result["fixes"] = [{
            "description": {"text": f"{diagnostic.fix.message} ({diagnostic.fix.applicability.value})"},
            "artifactChanges": [{"artifactLocation": artifact,
                                 "replacements": [_replacement(e) for e in diagnostic.fix.edits]}],
        }]
    return result


def sarif_log(diagnostics: list[Diagnostic]) -> dict[str, Any]:
    """The SARIF log object of one run (every catalogue rule described, in code order)."""
    infos = list(CATALOGUE.values())
    index = {info.code: i for i, info in enumerate(infos)}
    driver = {"name": "gradlint", "version": __version__, "semanticVersion": __version__,
              "informationUri": INFORMATION_URI, "rules": [_rule(info) for info in infos]}
    return {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": driver},
            "columnKind": "unicodeCodePoints",
            "originalUriBaseIds": {"%SRCROOT%": {"uri": Path.cwd().absolute().as_uri() + "/"}},
            "results": [_result(d, index.get(d.code)) for d in diagnostics],
        }],
    }


def render_sarif(diagnostics: list[Diagnostic], out: TextIO) -> None:
    """Write the SARIF log as indented JSON."""
    json.dump(sarif_log(diagnostics), out, indent=2)
    out.write("\n")
