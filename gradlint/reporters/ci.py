"""CI formats: GitHub Actions workflow commands and the GitLab code quality report."""

from __future__ import annotations

import hashlib
import json
from typing import TextIO

from gradlint.diagnostics import Diagnostic, Severity
from gradlint.reporters.model import location, shown_path


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


_GITHUB_COMMAND = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "notice"}
_GITLAB_SEVERITY = {Severity.ERROR: "major", Severity.WARNING: "minor", Severity.INFO: "info"}


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def render_github(diagnostics: list[Diagnostic], out: TextIO) -> None:
    """One ``::error`` / ``::warning`` / ``::notice`` (severity info) annotation per finding.

    Notebook findings name the file and the cell in the message (lines inside the notebook's
    JSON would point at the wrong place).
    """
    for d in diagnostics:
        command = _GITHUB_COMMAND[d.severity]
        props = [f"file={_escape_property(shown_path(d.path))}"]
        if d.cell is None:
            props += [f"line={d.line}", f"col={d.column}", f"endLine={d.span.end_line}",
                      f"endColumn={d.span.end_column}"]
        where = location(d)
        props.append(f"title={_escape_property(f'{d.code} {d.name}')}")
        out.write(f"::{command} {','.join(props)}::{_escape_data(f'{where}: {d.code} {d.message}')}\n")


def render_gitlab(diagnostics: list[Diagnostic], out: TextIO) -> None:
    """A GitLab code quality report: a JSON list of issues with stable fingerprints.

    A fingerprint hashes the path, cell, code and message (not the line, so it survives edits
    above the finding) plus the finding's rank among identical ones.
    """
    seen: dict[str, int] = {}
    issues = []
    for d in diagnostics:
        key = f"{d.path}\0{d.cell or ''}\0{d.code}\0{d.message}"
        rank = seen.get(key, 0)
        seen[key] = rank + 1
        description = f"{d.code} {d.message}" if d.cell is None else f"{d.code} (cell {d.cell}) {d.message}"
        issues.append({
            "type": "issue",
            "check_name": f"{d.code} {d.name}",
            "description": description,
            "categories": ["Bug Risk"],
            "severity": _GITLAB_SEVERITY[d.severity],
            "fingerprint": hashlib.sha256(f"{key}\0{rank}".encode("utf-8", "surrogateescape")).hexdigest(),
            "location": {"path": shown_path(d.path), "lines": {"begin": d.line, "end": d.span.end_line}},
        })
    json.dump(issues, out, indent=2)
    out.write("\n")
