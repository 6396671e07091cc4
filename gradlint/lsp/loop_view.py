"""How gradlint reads a loop, in the editor: inlay hints and hovers on training calls.

The placement :mod:`gradlint.explain` prints (each training call once per micro-batch, at the
update boundary, or on every iteration) becomes an inlay hint after the call
(``textDocument/inlayHint``: only sent when the client asks for them) and the hover of the
call ("runs once per micro-batch of the window gated at line 40, N = `args.accum`"). Calls
written in a helper the loop calls are left out: the hint would sit in another function.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, Protocol

from lsprotocol import types
from pygls.uris import to_fs_path

from gradlint.budget import AnalysisTimeout
from gradlint.explain import CallView, LoopView, explain_source
from gradlint.lsp.guard import over_limit, thread_budget
from gradlint.lsp.positions import Point, from_client, split_lines, to_client
from gradlint.lsp.settings_cache import SettingsCache
from gradlint.prefilter import judge


class GradlintServer(Protocol):
    """What these features use of :class:`gradlint.lsp.server.GradlintServer`."""

    settings_cache: SettingsCache
    timeout: float  # CPU seconds one reading of a document may take (0: no limit)

    @property
    def workspace(self) -> Any: ...

    @property
    def encoding(self) -> str: ...

    def feature(self, name: str, options: Any = None) -> Any: ...

LABELS = {"micro": "micro", "update": "update", "every": "every iteration"}
_EXECUTOR = ThreadPoolExecutor(max_workers=1, thread_name_prefix="gradlint-loops")
"""Loops are read on a thread of their own: a hint or hover never waits behind the linter."""


def label(call: CallView) -> str:
    """The inlay hint's text for ``call``: where it runs (``micro*``: Accelerate defers it)."""
    return "micro*" if call.deferred else LABELS[call.place]


def read_loops(text: str, path: str, server: GradlintServer) -> list[LoopView]:
    """The loops of a document's text as gradlint reads them: none when the text test says it
    holds no training loop, when it is over the size limit, or when reading it runs out of the
    server's time budget (its diagnostics say why)."""
    resolved = server.settings_cache.resolve(Path(path) if path else None)
    if not judge(text).loop or over_limit(text, resolved.max_file_size):
        return []
    try:
        with thread_budget(server.timeout):
            return explain_source(text, path, resolved.settings)
    except AnalysisTimeout:
        return []


def inlay_hints(views: list[LoopView], lines: list[str], encoding: str,
                window: types.Range) -> list[types.InlayHint]:
    """One hint after each training call (in the loop's own function) that ends in ``window``."""
    hints = []
    for view in views:
        for call in view.calls:
            if call.in_helper:
                continue
            end = to_client(lines, call.end_line, call.end_column, encoding)
            if not window.start.line <= end.line <= window.end.line:
                continue
            hints.append(types.InlayHint(position=types.Position(end.line, end.character), label=label(call),
                                         kind=types.InlayHintKind.Parameter, padding_left=True,
                                         tooltip=view.hint(call)))
    return hints


def call_at(views: list[LoopView], line: int, column: int) -> tuple[LoopView, CallView] | None:
    """The training call written at (1-based) ``line`` and ``column``, with its loop."""
    for view in views:
        for call in view.calls:
            if call.in_helper:
                continue
            if (call.line, call.column) <= (line, column) < (call.end_line, call.end_column):
                return view, call
    return None


def hover_text(view: LoopView, call: CallView) -> str:
    """The Markdown hover of a training call."""
    return f"`{call.code}` ({call.role}): {view.hint(call)}\n\ngradlint: loop at line {view.line}, {view.function}()"


async def loop_hover(server: GradlintServer, uri: str, text: str, point: Point) -> types.Hover | None:
    """The hover of the training call under ``point``, if there is one."""
    lines = split_lines(text)
    line, column = from_client(lines, point, server.encoding)
    if "(" not in lines[line]:
        return None  # no call on this line: nothing to read
    path = _path(uri)
    views = await asyncio.get_running_loop().run_in_executor(_EXECUTOR, read_loops, text, path, server)
    found = call_at(views, line + 1, column + 1)
    if found is None:
        return None
    return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=hover_text(*found)))


def _path(uri: str) -> str:
    """The file path of a ``file:`` URI (its configuration applies), else the URI itself."""
    return (to_fs_path(uri) if uri.startswith("file:") else None) or uri


def register(server: GradlintServer) -> None:
    """Add ``textDocument/inlayHint`` to ``server``."""

    @server.feature(types.TEXT_DOCUMENT_INLAY_HINT, types.InlayHintOptions(resolve_provider=False))
    async def inlay_hint(ls: GradlintServer, params: types.InlayHintParams) -> list[types.InlayHint] | None:
        document = ls.workspace.get_text_document(params.text_document.uri)
        text = document.source
        views = await asyncio.get_running_loop().run_in_executor(
            _EXECUTOR, read_loops, text, _path(params.text_document.uri), ls)
        return inlay_hints(views, split_lines(text), ls.encoding, params.range) or None
