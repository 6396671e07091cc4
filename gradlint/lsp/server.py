"""The gradlint language server (pygls 2): diagnostics, code actions, hover and inlay hints over stdio.

Lint runs on a worker thread, never on the event loop, so hover and code-action requests are
answered while a large file is analysed. Pushed diagnostics are debounced on change and
always computed on, and published for, the latest version of a document; a client that
supports pull diagnostics (``textDocument/diagnostic``) gets those instead of pushes.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from posixpath import basename
from typing import Any, BinaryIO, cast

from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams, JsonRpcInvalidRequest
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol
from pygls.uris import to_fs_path
from pygls.workspace import TextDocument

from gradlint import __version__
from gradlint.budget import DEFAULT_TIMEOUT, AnalysisTimeout
from gradlint.config import CONFIG_NAMES
from gradlint.diagnostics import Applicability, Diagnostic
from gradlint.engine import Reads, lint_source
from gradlint.fixer import fix_source
from gradlint.lsp.actions import FIX_ALL, ActionBuilder, code_actions, wants
from gradlint.lsp.convert import lsp_diagnostic, whole_text_edit
from gradlint.lsp.docs import rule_doc
from gradlint.lsp.documents import lsp_workspace
from gradlint.lsp.guard import not_analysed, over_limit, thread_budget
from gradlint.lsp.loop_view import loop_hover
from gradlint.lsp.loop_view import register as register_loop_view
from gradlint.lsp.noqa import code_at
from gradlint.lsp.positions import UTF16, Point, from_client, split_lines
from gradlint.lsp.settings_cache import SettingsCache
from gradlint.lsp.stream import ResyncingStdin
from gradlint.prefilter import judge
from gradlint.project.index import ProjectIndex
from gradlint.settings import Settings

LOG = logging.getLogger("gradlint.lsp")
DEBOUNCE_SECONDS = 0.2
WATCHERS_ID = "gradlint-config-watchers"


def document_path(uri: str) -> str | None:
    """The file-system path of a ``file:`` URI (None for unsaved buffers and other schemes)."""
    return to_fs_path(uri) if uri.startswith("file:") else None


def _path_of(uri: str) -> Path | None:
    """The absolute path of a ``file:`` URI, as the analysis names modules."""
    path = document_path(uri)
    return Path(path).absolute() if path else None


@dataclass(frozen=True)
class LintOutcome:
    """One lint of one text snapshot."""

    version: int | None
    text: str
    settings: Settings
    diagnostics: list[Diagnostic]
    seconds: float
    cpu_seconds: float
    settings_error: str | None = None
    elsewhere: tuple[Diagnostic, ...] = ()  # what its loops give in other modules (absolute paths)
    uses: frozenset[Path] = frozenset()  # the other modules it read (or looked for)


class _Malformed:
    """A request whose params could not be read: it is answered with an error."""

    def __init__(self, msg_id: Any, method: str, error: JsonRpcException) -> None:
        self.id = msg_id
        self.method = method
        self.error = error


class GradlintProtocol(LanguageServerProtocol):
    """pygls' protocol, but a request with unreadable params gets an error response
    (pygls would log it and never answer, leaving the client waiting)."""

    def structure_message(self, data: dict[str, Any]) -> Any:
        """Deserialise a message; a malformed request becomes a :class:`_Malformed`."""
        try:
            return super().structure_message(data)
        except JsonRpcException as exc:
            if "jsonrpc" in data and "id" in data and "method" in data:
                return _Malformed(data["id"], str(data["method"]), exc)
            raise

    def handle_message(self, message: Any) -> None:
        """Answer malformed requests with their error, and JSON that is no JSON-RPC message
        at all (``[]``, ``42``, an object pygls cannot read) with Invalid Request, id null as
        JSON-RPC asks when no request id can be told; hand everything else to pygls."""
        if isinstance(message, _Malformed):
            error = message.error
            if isinstance(error, JsonRpcInvalidParams):
                error = JsonRpcInvalidParams(f"invalid params for {message.method}")
            self._send_response(message.id, error=error.to_response_error())
            return
        if not hasattr(message, "jsonrpc"):
            error = JsonRpcInvalidRequest("not a JSON-RPC message")
            self._send_data({"jsonrpc": "2.0", "id": None, "error": {"code": error.code, "message": error.message}})
            return
        if self._shutdown and getattr(message, "method", "") != types.EXIT and hasattr(message, "id") \
                and hasattr(message, "method"):  # pygls drops it unanswered; LSP asks for InvalidRequest
            self._send_response(message.id, error=JsonRpcInvalidRequest("the server is shut down").to_response_error())
            return
        super().handle_message(message)


@dataclass
class _State:
    open: set[str] = field(default_factory=set)
    pending: dict[str, asyncio.Task] = field(default_factory=dict)
    results: dict[str, LintOutcome] = field(default_factory=dict)
    reported_errors: set[str] = field(default_factory=set)
    pull: bool = False
    elsewhere: dict[Path, dict[str, tuple[Diagnostic, ...]]] = field(default_factory=dict)
    """Module path -> {URI of an open document: what that document's loops give in the module}."""


class GradlintServer(LanguageServer):
    """The language server; handlers are registered in :func:`build_server`."""

    def __init__(self) -> None:
        super().__init__("gradlint", __version__, protocol_cls=GradlintProtocol,
                         text_document_sync_kind=types.TextDocumentSyncKind.Incremental)
        self.lint_executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="gradlint-lint")
        self.settings_cache = SettingsCache()
        self.state = _State()
        self.project = ProjectIndex()  # the workspace's modules by digest, open buffers first
        self.timeout: float = DEFAULT_TIMEOUT  # CPU seconds one lint may take (0: no limit)

    def report_server_error(self, error: Exception, source: Any) -> None:
        """A message body that is not JSON gets a Parse error response (id null, as JSON-RPC
        asks) instead of an error pop-up; other errors go to pygls' report."""
        if isinstance(error, (json.JSONDecodeError, UnicodeDecodeError)):
            self.protocol._send_data({"jsonrpc": "2.0", "id": None,
                                      "error": {"code": -32700, "message": f"parse error: {error}"}})
            return
        super().report_server_error(error, source)

    # -- client capabilities -------------------------------------------------------------

    @property
    def encoding(self) -> str:
        """The negotiated position encoding (``utf-16`` unless the client chose another)."""
        value = self.workspace.position_encoding or UTF16
        return value.value if isinstance(value, types.PositionEncodingKind) else str(value)

    def _capability(self, dotted: str) -> Any:
        value: Any = self.client_capabilities
        for part in dotted.split("."):
            value = getattr(value, part, None)
            if value is None:
                return None
        return value

    # -- linting ---------------------------------------------------------------------------

    def _lint_job(self, uri: str, version: int | None, text: str) -> LintOutcome:
        """Runs on the lint thread: settings for the document, the text test, then the core."""
        path = document_path(uri)
        resolved = self.settings_cache.resolve(Path(path) if path else None)
        started, cpu = time.perf_counter(), time.thread_time()
        shown = path or uri
        if path:  # what the document's dependents read of it, also when it has no loop itself
            self.project.use_text(Path(path), text)
        reads = Reads()
        too_large = over_limit(text, resolved.max_file_size)
        if too_large:
            diagnostics = not_analysed(shown, too_large, resolved.settings)
        else:
            try:
                with thread_budget(self.timeout):
                    verdict = judge(text)
                    diagnostics = lint_source(text, shown, resolved.settings, verdict=verdict, project=self.project,
                                              reads=reads) if verdict.worth(resolved.settings) else []
            except AnalysisTimeout as exc:
                diagnostics = not_analysed(shown, f"{exc} (the server gave up on this version)", resolved.settings)
        return LintOutcome(version, text, resolved.settings, diagnostics, time.perf_counter() - started,
                           time.thread_time() - cpu, resolved.error, tuple(reads.elsewhere), frozenset(reads.uses))

    async def lint(self, uri: str, version: int | None, text: str) -> LintOutcome | None:
        """Lint a snapshot off the event loop; log the time, report config errors once."""
        loop = asyncio.get_running_loop()
        try:
            outcome = await loop.run_in_executor(self.lint_executor, self._lint_job, uri, version, text)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a bug in a rule must not take the editor session down
            LOG.exception("lint failed for %s", uri)
            self.log(types.MessageType.Error, f"gradlint failed on {uri}: {type(exc).__name__}: {exc}")
            return None
        if outcome.settings_error and outcome.settings_error not in self.state.reported_errors:
            self.state.reported_errors.add(outcome.settings_error)
            self.window_show_message(types.ShowMessageParams(
                type=types.MessageType.Error,
                message=f"gradlint: {outcome.settings_error} (using the default rules)"))
        self.log(types.MessageType.Log,
                 f"linted {basename(uri)} (version {version}): {len(outcome.diagnostics)} "
                 f"diagnostics in {outcome.seconds * 1000:.1f} ms (CPU {outcome.cpu_seconds * 1000:.1f} ms)")
        if uri in self.state.open:
            previous = self.state.results.get(uri)
            self.state.results[uri] = outcome
            self._note_elsewhere(uri, outcome.elsewhere)
            if previous is not None and previous.text != outcome.text:
                self._relint_dependents(uri)
        return outcome

    # -- the project: diagnostics in other modules, dependents ------------------------------

    def _note_elsewhere(self, uri: str, found: tuple[Diagnostic, ...]) -> None:
        """Keep what ``uri``'s loops give in other modules; republish the open ones it changes."""
        by_path: dict[Path, list[Diagnostic]] = {}
        for diagnostic in found:
            by_path.setdefault(Path(diagnostic.path), []).append(diagnostic)
        changed: set[Path] = set()
        for path, sources in self.state.elsewhere.items():
            if uri in sources and path not in by_path:
                del sources[uri]
                changed.add(path)
        for path, diagnostics in by_path.items():
            sources = self.state.elsewhere.setdefault(path, {})
            if sources.get(uri) != tuple(diagnostics):
                sources[uri] = tuple(diagnostics)
                changed.add(path)
        targets = [other for other in self.state.open if other != uri and _path_of(other) in changed]
        if targets and self.state.pull:
            self._refresh()
            return
        for other in targets:
            outcome = self.state.results.get(other)
            if outcome is not None and other not in self.state.pending:
                self.publish(other, outcome.version, self.to_lsp(outcome, other))

    def _relint_dependents(self, uri: str) -> None:
        """``uri`` has new text: lint again every other open document whose last lint read it."""
        path = _path_of(uri)
        if path is None:
            return
        dependents = [other for other, outcome in self.state.results.items()
                      if other != uri and other in self.state.open and path in outcome.uses]
        if dependents and self.state.pull:
            self._refresh()
            return
        for other in dependents:
            self.schedule(other, 0)

    def _refresh(self) -> None:
        """Ask a pulling client for every open document's diagnostics again."""
        if self._capability("workspace.diagnostics.refresh_support"):
            self.workspace_diagnostic_refresh(None)

    def log(self, kind: types.MessageType, message: str) -> None:
        """A ``window/logMessage`` (shown in the editor's language-server log)."""
        self.window_log_message(types.LogMessageParams(type=kind, message=message))

    def to_lsp(self, outcome: LintOutcome, uri: str | None = None) -> list[types.Diagnostic]:
        """The outcome's diagnostics as LSP diagnostics of its own snapshot, with (given the
        document's ``uri``) those the loops of other open documents give in it."""
        lines = split_lines(outcome.text)
        found = list(outcome.diagnostics)
        path = _path_of(uri) if uri is not None else None
        if path is not None and path in self.state.elsewhere:
            seen = {(d.span, d.code) for d in found}
            for source, diagnostics in sorted(self.state.elsewhere[path].items()):
                if source not in self.state.open:
                    continue
                for diagnostic in diagnostics:
                    if (diagnostic.span, diagnostic.code) not in seen and diagnostic.span.line <= len(lines):
                        seen.add((diagnostic.span, diagnostic.code))
                        found.append(diagnostic)
        return [lsp_diagnostic(d, lines, self.encoding, outcome.version) for d in found]

    def open_document(self, uri: str) -> TextDocument:
        """The open document ``uri``. A request for any other is an error: its file is never
        read (a device or a FIFO would never end)."""
        if uri not in self.state.open:
            raise JsonRpcInvalidParams(f"{uri} is not an open document")
        return self.workspace.get_text_document(uri)

    def snapshot(self, uri: str) -> tuple[int | None, str] | None:
        """Version and text of an open document (None once it is closed)."""
        if uri not in self.state.open:
            return None
        document = self.workspace.get_text_document(uri)
        return document.version, document.source

    # -- pushed diagnostics ----------------------------------------------------------------

    def schedule(self, uri: str, delay: float) -> None:
        """(Re)start the publish task of ``uri``; an earlier pending one is cancelled."""
        if self.state.pull:
            return
        previous = self.state.pending.pop(uri, None)
        if previous is not None:
            previous.cancel()
        self.state.pending[uri] = asyncio.ensure_future(self._publish_later(uri, delay))

    async def _publish_later(self, uri: str, delay: float) -> None:
        try:
            if delay:
                await asyncio.sleep(delay)
            snapshot = self.snapshot(uri)
            if snapshot is None:
                return
            version, text = snapshot
            outcome = await self.lint(uri, version, text)
            current = self.snapshot(uri)
            if outcome is None or current is None or current[0] != version:
                return  # closed or edited meanwhile: a newer task publishes
            self.publish(uri, version, self.to_lsp(outcome, uri))
        finally:
            if self.state.pending.get(uri) is asyncio.current_task():
                del self.state.pending[uri]

    def publish(self, uri: str, version: int | None, diagnostics: list[types.Diagnostic]) -> None:
        """``textDocument/publishDiagnostics`` (with the version if the client takes it)."""
        with_version = self._capability("text_document.publish_diagnostics.version_support")
        self.text_document_publish_diagnostics(types.PublishDiagnosticsParams(
            uri=uri, diagnostics=diagnostics, version=version if with_version else None))

    async def fix_all_edit(self, uri: str, version: int | None, text: str) -> types.TextEdit | None:
        """The single edit applying every safe fix, or None when there is nothing to fix."""
        outcome = self.state.results.get(uri)
        if outcome is None or outcome.version != version or outcome.text != text:
            outcome = await self.lint(uri, version, text)
        if outcome is None or not any(d.fix and d.fix.applicability is Applicability.SAFE
                                      for d in outcome.diagnostics):
            return None
        loop = asyncio.get_running_loop()
        try:
            fixed = await loop.run_in_executor(self.lint_executor, self._fix_job, uri, text, outcome.settings)
        except Exception as exc:  # the quick fixes and the other actions are still offered
            LOG.exception("fix all failed for %s", uri)
            self.log(types.MessageType.Error, f"gradlint could not fix {uri}: {type(exc).__name__}: {exc}")
            return None
        if fixed is None or fixed == text:
            return None
        return whole_text_edit(text, fixed, self.encoding)

    def _fix_job(self, uri: str, text: str, settings: Settings) -> str | None:
        """Runs on the lint thread: the text with every safe fix, None when out of time."""
        try:
            with thread_budget(self.timeout):
                return fix_source(text, document_path(uri) or uri, settings, False).text
        except AnalysisTimeout:
            LOG.warning("gave up fixing %s: out of time", uri)
            return None

    def relint_open_documents(self) -> None:
        """Configuration changed: recompute every open document's diagnostics."""
        self.settings_cache.clear()
        if not self.state.pull:
            for uri in self.state.open:
                self.schedule(uri, 0)
        elif self._capability("workspace.diagnostics.refresh_support"):
            self.workspace_diagnostic_refresh(None)


def build_server() -> GradlintServer:
    """A server with every gradlint feature registered."""
    server = GradlintServer()

    @server.feature(types.INITIALIZE)
    def initialize(ls: GradlintServer, params: types.InitializeParams) -> None:
        ls.protocol._workspace = lsp_workspace(ls.workspace, types.TextDocumentSyncKind.Incremental)
        ls.state.pull = ls._capability("text_document.diagnostic") is not None

    @server.feature(types.INITIALIZED)
    def initialized(ls: GradlintServer, params: types.InitializedParams) -> None:
        if not ls._capability("workspace.did_change_watched_files.dynamic_registration"):
            return
        watchers = [types.FileSystemWatcher(glob_pattern=f"**/{name}") for name in CONFIG_NAMES]
        ls.client_register_capability(types.RegistrationParams(registrations=[types.Registration(
            id=WATCHERS_ID, method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
            register_options=types.DidChangeWatchedFilesRegistrationOptions(watchers=watchers))]))

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: GradlintServer, params: types.DidOpenTextDocumentParams) -> None:
        ls.state.open.add(params.text_document.uri)
        ls.schedule(params.text_document.uri, 0)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: GradlintServer, params: types.DidChangeTextDocumentParams) -> None:
        ls.schedule(params.text_document.uri, DEBOUNCE_SECONDS)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    def did_save(ls: GradlintServer, params: types.DidSaveTextDocumentParams) -> None:
        ls.schedule(params.text_document.uri, 0)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: GradlintServer, params: types.DidCloseTextDocumentParams) -> None:
        uri = params.text_document.uri
        ls.state.open.discard(uri)
        ls.state.results.pop(uri, None)
        ls._note_elsewhere(uri, ())
        closed = document_path(uri)
        if closed:
            ls.lint_executor.submit(ls.project.forget_text, Path(closed))  # the file on disk again
        task = ls.state.pending.pop(uri, None)
        if task is not None:
            task.cancel()
        if not ls.state.pull:
            ls.publish(uri, None, [])

    @server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
    def watched_files(ls: GradlintServer, params: types.DidChangeWatchedFilesParams) -> None:
        if any(basename(change.uri) in CONFIG_NAMES for change in params.changes):
            ls.relint_open_documents()

    @server.feature(types.TEXT_DOCUMENT_DIAGNOSTIC,
                    types.DiagnosticOptions(identifier="gradlint", inter_file_dependencies=True,
                                            workspace_diagnostics=False))
    async def pull(ls: GradlintServer, params: types.DocumentDiagnosticParams
                   ) -> types.RelatedFullDocumentDiagnosticReport:
        uri = params.text_document.uri
        while True:
            document = ls.open_document(uri)
            version, text = document.version, document.source
            outcome = await ls.lint(uri, version, text)
            latest = ls.open_document(uri)
            if latest.version == version:
                break
        items = ls.to_lsp(outcome, uri) if outcome else []
        return types.RelatedFullDocumentDiagnosticReport(items=items)

    @server.feature(types.TEXT_DOCUMENT_CODE_ACTION, types.CodeActionOptions(
        code_action_kinds=[types.CodeActionKind.QuickFix, FIX_ALL]))
    async def code_action(ls: GradlintServer, params: types.CodeActionParams
                          ) -> list[types.CodeAction] | None:
        uri = params.text_document.uri
        document = ls.open_document(uri)
        version, text = document.version, document.source
        builder = ActionBuilder(uri, version, text, ls.encoding,
                                bool(ls._capability("workspace.workspace_edit.document_changes")))
        only = params.context.only
        actions = code_actions(builder, list(params.context.diagnostics), only)
        automatic = params.context.trigger_kind == types.CodeActionTriggerKind.Automatic
        if wants(only, FIX_ALL) and (only is not None or not automatic):  # lightbulb: skip the fixer
            edit = await ls.fix_all_edit(uri, version, text)
            if edit is not None and ls.workspace.get_text_document(uri).version == version:
                actions.append(builder.fix_all(edit))
        return actions or None

    @server.feature(types.TEXT_DOCUMENT_HOVER)
    async def hover(ls: GradlintServer, params: types.HoverParams) -> types.Hover | None:
        document = ls.open_document(params.text_document.uri)
        lines = split_lines(document.source)
        position = params.position
        line, column = from_client(lines, Point(position.line, position.character), ls.encoding)
        code = code_at(lines[line], column)
        doc = rule_doc(code) if code else None
        if doc is None:  # not a code in a noqa comment: maybe a training call
            return await loop_hover(ls, params.text_document.uri, document.source,
                                    Point(position.line, position.character))
        return types.Hover(contents=types.MarkupContent(kind=types.MarkupKind.Markdown, value=doc))

    register_loop_view(server)
    return server


def serve() -> None:
    """Run the server on stdin / stdout until the client says exit."""
    logging.basicConfig(level=logging.WARNING, format="gradlint-lsp: %(levelname)s: %(message)s")
    server = build_server()
    server.start_io(stdin=cast(BinaryIO, ResyncingStdin(sys.stdin.buffer)))  # reads like one
    # pygls swallows the SystemExit of ``exit``: the status LSP asks for (1 without an
    # earlier shutdown request, also when the client just goes away) is set here
    sys.exit(0 if server.protocol._shutdown else 1)
