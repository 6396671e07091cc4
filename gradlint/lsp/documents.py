"""Documents as LSP clients see them: lines end at ``\\n``, ``\\r\\n`` or ``\\r`` only.

pygls splits a document with ``str.splitlines``, which also ends a line at a form feed,
``\\x0b``, ``\\x1c``-``\\x1e``, ``\\x85``, ``\\u2028`` or ``\\u2029``: one of them in a comment
shifts every later line, so an incremental edit lands in the wrong place. The document
here splits as the protocol says, and never reads its file (a device or a FIFO never ends;
the server only works on the text the client sent).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lsprotocol import types
from pygls.workspace import TextDocument, Workspace

from gradlint.lsp.positions import lines_with_ends


class LspTextDocument(TextDocument):
    """A text document split into lines at LSP line breaks only."""

    @property
    def lines(self) -> Sequence[str]:
        """The lines with their line breaks."""
        return tuple(lines_with_ends(self.source))

    @property
    def source(self) -> str:
        """The text the client sent (empty for a document it never opened)."""
        return self._source or ""


class LspWorkspace(Workspace):
    """pygls' workspace holding :class:`LspTextDocument` documents."""

    def _create_text_document(self, doc_uri: str, source: str | None = None, version: int | None = None,
                              language_id: str | None = None) -> TextDocument:
        return LspTextDocument(doc_uri, source=source, version=version, language_id=language_id,
                               sync_kind=self._sync_kind, position_codec=self._position_codec)


def lsp_workspace(workspace: Workspace, sync_kind: types.TextDocumentSyncKind) -> LspWorkspace:
    """A fresh :class:`LspWorkspace` like ``workspace`` (made at ``initialize``, before any
    document is opened)."""
    folders: Any = list(workspace.folders.values())
    return LspWorkspace(workspace.root_uri, sync_kind, folders, workspace.position_encoding)
