"""Code actions: the quick fix a diagnostic carries, "Disable GLxxx for this line", fix all."""

from __future__ import annotations

from collections.abc import Sequence

from lsprotocol import types

from gradlint.catalogue import SYNTAX_ERROR
from gradlint.diagnostics import Applicability, Edit, Span
from gradlint.lsp.convert import SOURCE, fix_from_data, lsp_edits, lsp_text_edit
from gradlint.lsp.noqa import add_code
from gradlint.lsp.positions import split_lines

FIX_ALL = "source.fixAll.gradlint"


def wants(only: Sequence[str] | None, kind: str) -> bool:
    """Whether a request restricted to the kinds ``only`` asks for actions of ``kind``."""
    return only is None or any(kind == base or kind.startswith(base + ".") for base in only)


class ActionBuilder:
    """Builds the workspace edits of one document at one version."""

    def __init__(self, uri: str, version: int | None, text: str, encoding: str,
                 document_changes: bool) -> None:
        self.uri = uri
        self.version = version
        self.text = text
        self.lines = split_lines(text)
        self.encoding = encoding
        self.document_changes = document_changes

    def workspace_edit(self, edits: list[types.TextEdit]) -> types.WorkspaceEdit:
        """Edits of this document, pinned to its version when the client supports that."""
        if self.document_changes:
            document = types.OptionalVersionedTextDocumentIdentifier(uri=self.uri, version=self.version)
            return types.WorkspaceEdit(document_changes=[types.TextDocumentEdit(document, edits)])
        return types.WorkspaceEdit(changes={self.uri: edits})

    def quick_fix(self, diagnostic: types.Diagnostic) -> types.CodeAction | None:
        """The fix carried in the diagnostic's ``data``, if it was computed on this version."""
        if diagnostic.source != SOURCE:
            return None
        fix = fix_from_data(diagnostic.data, self.version)
        if fix is None:
            return None
        safe = fix.applicability is Applicability.SAFE
        title = f"{fix.message} ({diagnostic.code})" if safe else f"{fix.message} ({diagnostic.code}, unsafe fix)"
        return types.CodeAction(
            title=title,
            kind=types.CodeActionKind.QuickFix,
            diagnostics=[diagnostic],
            is_preferred=safe,
            edit=self.workspace_edit(lsp_edits(fix, self.lines, self.encoding)),
        )

    def disable(self, diagnostic: types.Diagnostic) -> types.CodeAction | None:
        """``# noqa: GLxxx`` added to (or extended on) the diagnostic's first line, if the
        diagnostic was computed on this version (after an edit its line may hold other code,
        or the inside of a docstring)."""
        code = diagnostic.code
        if diagnostic.source != SOURCE or not isinstance(code, str) or code == SYNTAX_ERROR.code:
            return None
        if not isinstance(diagnostic.data, dict) or diagnostic.data.get("version") != self.version:
            return None
        line = diagnostic.range.start.line
        if line >= len(self.lines):
            return None
        change = add_code(self.text, line, code)
        if change is None:
            return None
        edit = Edit(Span(line + 1, change.start + 1, line + 1, change.end + 1), change.content)
        return types.CodeAction(
            title=f"Disable {code} for this line",
            kind=types.CodeActionKind.QuickFix,
            diagnostics=[diagnostic],
            edit=self.workspace_edit([lsp_text_edit(edit, self.lines, self.encoding)]),
        )

    def fix_all(self, edit: types.TextEdit) -> types.CodeAction:
        """The ``source.fixAll.gradlint`` action with its one edit."""
        return types.CodeAction(
            title="Fix all auto-fixable gradlint problems",
            kind=FIX_ALL,
            edit=self.workspace_edit([edit]),
        )


def code_actions(builder: ActionBuilder, diagnostics: list[types.Diagnostic],
                 only: Sequence[str] | None) -> list[types.CodeAction]:
    """Quick fixes first (one per fixable diagnostic), then one "disable" per code and line."""
    if not wants(only, types.CodeActionKind.QuickFix):
        return []
    actions = [a for a in map(builder.quick_fix, diagnostics) if a is not None]
    seen: set[tuple[object, int]] = set()
    for diagnostic in diagnostics:
        key = (diagnostic.code, diagnostic.range.start.line)
        if key in seen:
            continue
        seen.add(key)
        action = builder.disable(diagnostic)
        if action is not None:
            actions.append(action)
    return actions
