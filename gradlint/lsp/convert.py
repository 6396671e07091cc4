"""gradlint values as LSP values: diagnostics, fixes and edits, on one text snapshot."""

from __future__ import annotations

from typing import Any

from lsprotocol import types

from gradlint.diagnostics import Diagnostic, Edit, Fix, Severity, Span
from gradlint.lsp.docs import rule_doc_path
from gradlint.lsp.positions import Point, lines_with_ends, span_to_client, split_lines, to_client

SOURCE = "gradlint"

SEVERITIES = {
    Severity.ERROR: types.DiagnosticSeverity.Error,
    Severity.WARNING: types.DiagnosticSeverity.Warning,
    Severity.INFO: types.DiagnosticSeverity.Information,
}


def lsp_range(lines: list[str], span: Span, encoding: str) -> types.Range:
    """The LSP range of a gradlint span in the text ``lines``."""
    start, end = span_to_client(lines, span, encoding)
    return types.Range(_position(start), _position(end))


def _position(point: Point) -> types.Position:
    return types.Position(line=point.line, character=point.character)


def lsp_diagnostic(diagnostic: Diagnostic, lines: list[str], encoding: str,
                   version: int | None) -> types.Diagnostic:
    """One LSP diagnostic; ``data`` carries the fix (gradlint's JSON form) and the
    document version it was computed on, so a quick fix needs no re-lint."""
    doc = rule_doc_path(diagnostic.code)
    data: dict[str, Any] = {"version": version, "fix": diagnostic.fix.to_dict() if diagnostic.fix else None}
    return types.Diagnostic(
        range=lsp_range(lines, diagnostic.span, encoding),
        message=diagnostic.message,
        severity=SEVERITIES[diagnostic.severity],
        code=diagnostic.code,
        code_description=types.CodeDescription(href=doc.as_uri()) if doc else None,
        source=SOURCE,
        data=data,
    )


def lsp_edits(fix: Fix, lines: list[str], encoding: str) -> list[types.TextEdit]:
    """The text edits of a fix, in the coordinates of the text it was computed on."""
    return [lsp_text_edit(edit, lines, encoding) for edit in fix.edits]


def lsp_text_edit(edit: Edit, lines: list[str], encoding: str) -> types.TextEdit:
    """One gradlint edit as an LSP text edit."""
    return types.TextEdit(range=lsp_range(lines, edit.span, encoding), new_text=edit.content)


def fix_from_data(data: Any, version: int | None) -> Fix | None:
    """The fix carried by a diagnostic's ``data`` if it was computed on ``version``."""
    if not isinstance(data, dict) or data.get("version") != version or not data.get("fix"):
        return None
    try:
        return Fix.from_dict(data["fix"])
    except (KeyError, TypeError, ValueError):
        return None


def whole_text_edit(old: str, new: str, encoding: str) -> types.TextEdit:
    """One edit turning ``old`` into ``new``: the lines between their common head and tail,
    line breaks included (each line keeps the break it has in ``new``)."""
    old_lines, new_lines = lines_with_ends(old), lines_with_ends(new)
    head = 0
    while head < min(len(old_lines), len(new_lines)) and old_lines[head] == new_lines[head]:
        head += 1
    tail = 0
    while (tail < min(len(old_lines), len(new_lines)) - head
           and old_lines[-1 - tail] == new_lines[-1 - tail]):
        tail += 1
    content = "".join(new_lines[head:len(new_lines) - tail])
    start = types.Position(line=head, character=0)
    if tail or not old_lines or old.endswith(("\n", "\r")):
        end = types.Position(line=len(old_lines) - tail, character=0)
    else:  # up to the end of a last line without a break
        last = split_lines(old)
        end = _position(to_client(last, len(last), len(last[-1]) + 1, encoding))
    return types.TextEdit(range=types.Range(start, end), new_text=content)
