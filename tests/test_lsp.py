"""The language server end to end: ``python -m gradlint lsp`` in a subprocess, driven by pytest-lsp."""

from __future__ import annotations

import asyncio
import itertools
import re
import sys
import uuid
from concurrent.futures import Future
from pathlib import Path

import pytest

pytest.importorskip("pytest_lsp", reason="the language-server tests need the test extra (pytest-lsp)")

import pytest_lsp  # noqa: E402
from lsprotocol import types  # noqa: E402
from pygls.exceptions import JsonRpcException  # noqa: E402
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities  # noqa: E402

from gradlint.fixer import fix_source  # noqa: E402
from gradlint.settings import default_settings  # noqa: E402

pytestmark = [pytest.mark.asyncio(loop_scope="function"),
              pytest.mark.filterwarnings("error::pytest_lsp.LspSpecificationWarning")]

SERVER = ClientServerConfig(server_command=[sys.executable, "-m", "gradlint", "lsp"])
TIMEOUT = 20

# One GL101 on line 9 (0-based 8): the clip call, columns 12-67 (0-based, UTF-16).
CLIP_PER_MICRO_BATCH = """\
import torch


def train(model, windows, optimizer):
    for window in windows:
        for batch in window:
            loss = model(batch) / len(window)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad()
"""
CLEAN = CLIP_PER_MICRO_BATCH.replace(
    "            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n", "")
# GL101 and GL104, both with fixes (GL101's is safe).
TWO_FIXABLE = CLIP_PER_MICRO_BATCH.replace(
    "(model, windows, optimizer)", "(model, windows, optimizer, scheduler)").replace(
    "1.0)\n", "1.0)\n            scheduler.step()\n")


class Recorder:
    """Every ``publishDiagnostics`` the client receives, in order (pytest-lsp keeps the last)."""

    def __init__(self, client: LanguageClient) -> None:
        self.published: list[types.PublishDiagnosticsParams] = []
        handler = client.protocol.fm.features[types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS]

        def record(params: types.PublishDiagnosticsParams) -> None:
            self.published.append(params)
            handler(params)

        client.protocol.fm.features[types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS] = record

    async def next(self, uri: str, count: int = 1) -> types.PublishDiagnosticsParams:
        """Wait until ``count`` diagnostics publications for ``uri`` arrived; the last one."""
        async def arrived() -> types.PublishDiagnosticsParams:
            while len(self.of(uri)) < count:
                await asyncio.sleep(0.02)
            return self.of(uri)[-1]

        return await asyncio.wait_for(arrived(), TIMEOUT)

    def of(self, uri: str) -> list[types.PublishDiagnosticsParams]:
        return [p for p in self.published if p.uri == uri]


async def _start(client: LanguageClient, spec: str, root: Path, *, versions: bool = False) -> None:
    """Initialize like the client ``spec`` (optionally also taking diagnostics' versions);
    registrations the server asks for are kept in ``client.registrations``."""
    capabilities = client_capabilities(spec)
    if versions:
        capabilities.text_document.publish_diagnostics.version_support = True
    client.registrations = []

    @client.feature(types.CLIENT_REGISTER_CAPABILITY)
    def register(params: types.RegistrationParams) -> None:
        client.registrations.extend(params.registrations)

    await client.initialize_session(types.InitializeParams(
        capabilities=capabilities, root_uri=root.as_uri(),
        workspace_folders=[types.WorkspaceFolder(uri=root.as_uri(), name="work")]))


@pytest_lsp.fixture(config=SERVER)
async def client(lsp_client: LanguageClient, tmp_path: Path):
    """A push-diagnostics client with VS Code 1.65's capabilities (versioned document edits),
    plus versioned diagnostics."""
    await _start(lsp_client, "visual-studio-code@v1.65.2", tmp_path, versions=True)
    yield
    await lsp_client.shutdown_session()


@pytest_lsp.fixture(config=SERVER)
async def plain_client(lsp_client: LanguageClient, tmp_path: Path):
    """Neovim 0.7's capabilities: push diagnostics, plain ``changes`` edits, no watchers."""
    await _start(lsp_client, "neovim@v0.7.0", tmp_path)
    yield
    await lsp_client.shutdown_session()


@pytest_lsp.fixture(config=SERVER)
async def pull_client(lsp_client: LanguageClient, tmp_path: Path):
    """Neovim 0.10's capabilities: pull diagnostics."""
    await _start(lsp_client, "neovim@v0.10.0", tmp_path)
    yield
    await lsp_client.shutdown_session()


@pytest.fixture(scope="module")
def shared_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("lsp-shared")


@pytest_lsp.fixture(config=SERVER, scope="module")
async def shared_client(lsp_client: LanguageClient, shared_root: Path):
    """One server (VS Code 1.65's capabilities, like ``client``) for the tests that only open
    their own document in their own folder and read what is published for it: starting a
    server per test costs more than the test."""
    await _start(lsp_client, "visual-studio-code@v1.65.2", shared_root, versions=True)
    yield
    await lsp_client.shutdown_session()


SHARED_LOOP = pytest.mark.asyncio(loop_scope="module")
"""The event loop of ``shared_client`` (module-scoped)."""
_FOLDERS = itertools.count(1)


@pytest.fixture
def folder(shared_root: Path) -> Path:
    """A folder of its own inside the shared server's workspace."""
    path = shared_root / f"case{next(_FOLDERS)}"
    path.mkdir()
    return path


def _codes(published: types.PublishDiagnosticsParams) -> list[str]:
    return [str(d.code) for d in published.diagnostics]


def _open(client: LanguageClient, path: Path, text: str, version: int = 1) -> str:
    uri = path.as_uri()
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        types.TextDocumentItem(uri=uri, language_id="python", version=version, text=text)))
    return uri


def _replace_all(client: LanguageClient, uri: str, version: int, text: str) -> None:
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
        content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)]))


def _offset(text: str, position: types.Position) -> int:
    """Character offset of an LSP position (UTF-16 columns), written independently of the server."""
    lines = text.split("\n")
    start = sum(len(line) + 1 for line in lines[: position.line])
    units = 0
    for index, char in enumerate(lines[position.line]):
        if units >= position.character:
            return start + index
        units += 2 if ord(char) > 0xFFFF else 1
    return start + len(lines[position.line])


def _apply(text: str, edits: list[types.TextEdit]) -> str:
    spans = [(_offset(text, e.range.start), _offset(text, e.range.end), e.new_text) for e in edits]
    for start, end, new in sorted(spans, reverse=True):
        text = text[:start] + new + text[end:]
    return text


def _edits_of(action: types.CodeAction, uri: str, version: int | None = None) -> list[types.TextEdit]:
    """The edits of a versioned-document-changes or plain-changes workspace edit."""
    edit = action.edit
    assert edit is not None
    if edit.document_changes is not None:
        (change,) = edit.document_changes
        assert isinstance(change, types.TextDocumentEdit)
        assert change.text_document.uri == uri
        assert change.text_document.version == version
        return list(change.edits)
    assert edit.changes is not None
    return list(edit.changes[uri])


async def _actions(client: LanguageClient, uri: str, diagnostics: list[types.Diagnostic],
                   only: list[str] | None = None,
                   trigger: types.CodeActionTriggerKind | None = None) -> list[types.CodeAction]:
    whole = types.Range(types.Position(0, 0), types.Position(0, 0))
    result = await client.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        range=diagnostics[0].range if diagnostics else whole,
        context=types.CodeActionContext(diagnostics=diagnostics, only=only, trigger_kind=trigger)))
    return [a for a in result or [] if isinstance(a, types.CodeAction)]


def _raw_request(client: LanguageClient, method: str, params: object) -> asyncio.Future:
    """Send a request exactly as given (the typed client would refuse malformed params)."""
    msg_id = str(uuid.uuid4())
    future: Future = Future()
    client.protocol._request_futures[msg_id] = future
    client.protocol._send_data({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
    return asyncio.wrap_future(future)


@SHARED_LOOP
async def test_diagnostics_on_open(shared_client: LanguageClient, folder: Path):
    client = shared_client
    recorder = Recorder(client)
    uri = _open(client, folder / "train.py", CLIP_PER_MICRO_BATCH)
    published = await recorder.next(uri)
    assert published.version == 1
    (diagnostic,) = published.diagnostics
    assert diagnostic.code == "GL101"
    assert diagnostic.source == "gradlint"
    assert diagnostic.severity == types.DiagnosticSeverity.Error
    assert diagnostic.range == types.Range(types.Position(8, 12), types.Position(8, 67))
    assert diagnostic.message.startswith("torch.nn.utils.clip_grad_norm_() runs on every micro-batch")
    assert diagnostic.code_description is not None
    assert diagnostic.code_description.href.startswith("file://")
    assert diagnostic.code_description.href.endswith("/GL101.md")
    assert diagnostic.data["version"] == 1
    assert diagnostic.data["fix"]["applicability"] == "safe"


@SHARED_LOOP
async def test_columns_are_utf16_code_units(shared_client: LanguageClient, folder: Path):
    client = shared_client
    recorder = Recorder(client)
    line = '            note = "\U0001F600"; torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n'
    text = CLIP_PER_MICRO_BATCH.replace(
        "            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)\n", line)
    uri = _open(client, folder / "emoji.py", text)
    (diagnostic,) = (await recorder.next(uri)).diagnostics
    # gradlint reports the call at code point 25 (1-based), i.e. 24 from 0; the emoji before
    # it is one code point but two UTF-16 code units.
    assert diagnostic.range.start == types.Position(8, 25)
    assert diagnostic.range.end == types.Position(8, 80)


async def test_diagnostics_follow_edits_and_are_never_published_for_a_stale_version(
        client: LanguageClient, tmp_path: Path):
    recorder = Recorder(client)
    uri = _open(client, tmp_path / "train.py", CLEAN)
    assert _codes(await recorder.next(uri)) == []
    texts = {1: CLEAN}
    for version in range(2, 8):  # a burst of typing, ending with the bug in place
        texts[version] = CLIP_PER_MICRO_BATCH if version % 2 else CLEAN
        _replace_all(client, uri, version, texts[version])
    published = await _until(recorder, uri, lambda p: p.version == 7)
    assert [d.code for d in published.diagnostics] == ["GL101"]
    _replace_all(client, uri, 8, CLEAN)
    published = await _until(recorder, uri, lambda p: p.version == 8)
    assert _codes(published) == []
    versions = [p.version for p in recorder.of(uri)]
    assert versions == sorted(set(versions))  # debounced: each version at most once, in order
    for publication in recorder.of(uri):  # and each one describes the text of its own version
        expected = ["GL101"] if texts.get(publication.version, CLEAN) != CLEAN else []
        assert [d.code for d in publication.diagnostics] == expected
    linted = [m.message for m in client.log_messages if m.message.startswith("linted train.py")]
    assert linted[0].startswith("linted train.py (version 1): 0 diagnostics in ")
    assert linted[-1].startswith("linted train.py (version 8): 0 diagnostics in ")
    assert all(re.fullmatch(r"linted train\.py \(version \d\): \d diagnostics in [0-9.]+ ms \(CPU [0-9.]+ ms\)", m)
               for m in linted)


async def _until(recorder: Recorder, uri: str, wanted) -> types.PublishDiagnosticsParams:
    async def arrived() -> types.PublishDiagnosticsParams:
        while not any(wanted(p) for p in recorder.of(uri)):
            await asyncio.sleep(0.02)
        return next(p for p in recorder.of(uri) if wanted(p))

    return await asyncio.wait_for(arrived(), TIMEOUT)


@SHARED_LOOP
async def test_quick_fix_from_data_clears_the_diagnostic(shared_client: LanguageClient, folder: Path):
    client = shared_client
    recorder = Recorder(client)
    uri = _open(client, folder / "train.py", CLIP_PER_MICRO_BATCH)
    (diagnostic,) = (await recorder.next(uri)).diagnostics
    actions = await _actions(client, uri, [diagnostic])
    assert [a.title for a in actions] == [
        "Move `torch.nn.utils.clip_grad_norm_()` to the update boundary (clip once, just before the step) (GL101)",
        "Disable GL101 for this line",
        "Fix all auto-fixable gradlint problems",
    ]
    fix = actions[0]
    assert fix.kind == types.CodeActionKind.QuickFix and fix.is_preferred
    fixed = _apply(CLIP_PER_MICRO_BATCH, _edits_of(fix, uri, 1))
    assert fixed == fix_source(CLIP_PER_MICRO_BATCH, "train.py", default_settings()).text
    assert "            loss.backward()\n        torch.nn.utils.clip_grad_norm_(" in fixed
    _replace_all(client, uri, 2, fixed)
    published = await recorder.next(uri, 2)
    assert (published.version, _codes(published)) == (2, [])


@SHARED_LOOP
async def test_automatic_requests_skip_the_fix_all_computation(shared_client: LanguageClient, folder: Path):
    client = shared_client
    recorder = Recorder(client)
    uri = _open(client, folder / "train.py", CLIP_PER_MICRO_BATCH)
    (diagnostic,) = (await recorder.next(uri)).diagnostics
    actions = await _actions(client, uri, [diagnostic], trigger=types.CodeActionTriggerKind.Automatic)
    assert [a.kind for a in actions] == [types.CodeActionKind.QuickFix] * 2


@SHARED_LOOP
async def test_no_action_is_offered_for_a_stale_diagnostic(shared_client: LanguageClient, folder: Path):
    """Neither the quick fix nor "Disable GLxxx for this line": after the edit the
    diagnostic's line holds other code."""
    client = shared_client
    recorder = Recorder(client)
    uri = _open(client, folder / "train.py", CLIP_PER_MICRO_BATCH)
    (diagnostic,) = (await recorder.next(uri)).diagnostics
    _replace_all(client, uri, 2, "# a comment on top\n" + CLIP_PER_MICRO_BATCH)
    assert await _actions(client, uri, [diagnostic], only=[types.CodeActionKind.QuickFix]) == []


async def test_disable_for_this_line(plain_client: LanguageClient, tmp_path: Path):
    client = plain_client
    recorder = Recorder(client)
    uri = _open(client, tmp_path / "train.py", CLIP_PER_MICRO_BATCH)
    (diagnostic,) = (await recorder.next(uri)).diagnostics
    (action,) = [a for a in await _actions(client, uri, [diagnostic]) if a.title.startswith("Disable")]
    assert action.title == "Disable GL101 for this line"
    text = _apply(CLIP_PER_MICRO_BATCH, _edits_of(action, uri))
    assert text.split("\n")[8] == "            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)  # noqa: GL101"
    _replace_all(client, uri, 2, text)
    assert _codes(await recorder.next(uri, 2)) == []


@SHARED_LOOP
async def test_disable_extends_an_existing_noqa(shared_client: LanguageClient, folder: Path):
    client = shared_client
    recorder = Recorder(client)
    text = CLIP_PER_MICRO_BATCH.replace("1.0)\n", "1.0)  # noqa: E501\n")
    uri = _open(client, folder / "train.py", text)
    (diagnostic,) = (await recorder.next(uri)).diagnostics
    (action,) = [a for a in await _actions(client, uri, [diagnostic]) if a.title.startswith("Disable")]
    fixed = _apply(text, _edits_of(action, uri, 1))
    assert fixed.split("\n")[8].endswith("1.0)  # noqa: E501, GL101")


@SHARED_LOOP
async def test_fix_all(shared_client: LanguageClient, folder: Path):
    client = shared_client
    recorder = Recorder(client)
    uri = _open(client, folder / "train.py", TWO_FIXABLE)
    published = await recorder.next(uri)
    assert [d.code for d in published.diagnostics] == ["GL101", "GL104"]
    (action,) = await _actions(client, uri, [], only=[types.CodeActionKind.SourceFixAll])
    assert action.kind == "source.fixAll.gradlint"
    assert action.title == "Fix all auto-fixable gradlint problems"
    fixed = _apply(TWO_FIXABLE, _edits_of(action, uri, 1))
    expected = fix_source(TWO_FIXABLE, "train.py", default_settings())  # what check --fix does
    assert fixed == expected.text
    assert "GL101" in [d.code for d in expected.fixed]
    _replace_all(client, uri, 2, fixed)
    assert _codes(await recorder.next(uri, 2)) == [d.code for d in expected.remaining]
    assert await _actions(client, uri, [], only=["source.fixAll.gradlint"]) == []


@SHARED_LOOP
async def test_close_clears_diagnostics(shared_client: LanguageClient, folder: Path):
    client = shared_client
    recorder = Recorder(client)
    uri = _open(client, folder / "train.py", CLIP_PER_MICRO_BATCH)
    assert len((await recorder.next(uri)).diagnostics) == 1
    client.text_document_did_close(types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(uri=uri)))
    assert _codes(await recorder.next(uri, 2)) == []


@SHARED_LOOP
async def test_syntax_error_is_a_gl000_diagnostic(shared_client: LanguageClient, folder: Path):
    client = shared_client
    recorder = Recorder(client)
    broken = CLIP_PER_MICRO_BATCH.replace("loss.backward()", "loss.backward(")
    uri = _open(client, folder / "train.py", broken)
    (diagnostic,) = (await recorder.next(uri)).diagnostics
    assert diagnostic.code == "GL000"
    assert diagnostic.message.startswith("syntax error")
    assert diagnostic.range.start.line == 7
    _replace_all(client, uri, 2, CLIP_PER_MICRO_BATCH)
    assert [d.code for d in (await recorder.next(uri, 2)).diagnostics] == ["GL101"]


@SHARED_LOOP
async def test_malformed_requests_are_answered_and_the_server_keeps_serving(shared_client: LanguageClient, folder: Path):
    client = shared_client
    recorder = Recorder(client)
    text = CLIP_PER_MICRO_BATCH.replace("1.0)\n", "1.0)  # noqa: GL101\n")
    uri = _open(client, folder / "train.py", text)
    assert _codes(await recorder.next(uri)) == []
    with pytest.raises(JsonRpcException) as error:
        await asyncio.wait_for(_raw_request(client, "textDocument/hover", {"textDocument": 42}), TIMEOUT)
    assert error.value.code == -32602
    with pytest.raises(JsonRpcException) as error:
        await asyncio.wait_for(_raw_request(client, "gradlint/noSuchMethod", {}), TIMEOUT)
    assert error.value.code == -32601
    client.protocol._send_data({"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {"x": 1}})
    hover = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        position=types.Position(8, text.split("\n")[8].index("GL101") + 2)))
    assert hover is not None
    assert isinstance(hover.contents, types.MarkupContent)
    assert hover.contents.kind == types.MarkupKind.Markdown
    assert hover.contents.value.startswith("# GL101: clip-per-micro-batch")


@SHARED_LOOP
async def test_requests_are_answered_while_a_large_file_is_linted(shared_client: LanguageClient, folder: Path):
    client = shared_client
    recorder = Recorder(client)
    large = "".join(CLIP_PER_MICRO_BATCH.replace("def train(", f"def train{n}(") for n in range(80))
    uri = _open(client, folder / "large.py", large)
    hover = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(0, 0)))
    assert hover is None
    assert recorder.of(uri) == []  # answered while the lint thread was still busy
    assert _codes(await recorder.next(uri)) == ["GL101"] * 80


@SHARED_LOOP
async def test_hover_outside_a_noqa_code_and_a_training_call_is_empty(shared_client: LanguageClient,
                                                                        folder: Path):
    client = shared_client
    uri = _open(client, folder / "train.py", CLIP_PER_MICRO_BATCH)
    for position in (types.Position(6, 20), types.Position(4, 8)):  # model(batch); the for header
        hover = await client.text_document_hover_async(types.HoverParams(
            text_document=types.TextDocumentIdentifier(uri=uri), position=position))
        assert hover is None


async def test_pull_diagnostics(pull_client: LanguageClient, tmp_path: Path):
    client = pull_client
    recorder = Recorder(client)
    uri = _open(client, tmp_path / "train.py", CLIP_PER_MICRO_BATCH)
    report = await client.text_document_diagnostic_async(types.DocumentDiagnosticParams(
        text_document=types.TextDocumentIdentifier(uri=uri)))
    assert report.kind == "full"
    assert [(d.code, d.range.start.line) for d in report.items] == [("GL101", 8)]
    _replace_all(client, uri, 2, CLEAN)
    report = await client.text_document_diagnostic_async(types.DocumentDiagnosticParams(
        text_document=types.TextDocumentIdentifier(uri=uri)))
    assert list(report.items) == []
    assert recorder.published == []  # a pull client is not sent pushes as well


async def test_configuration_is_reloaded_when_it_changes(client: LanguageClient, tmp_path: Path):
    recorder = Recorder(client)
    config = tmp_path / "pyproject.toml"
    config.write_text('[tool.gradlint]\nignore = ["GL101"]\n')
    uri = _open(client, tmp_path / "train.py", CLIP_PER_MICRO_BATCH)
    assert _codes(await recorder.next(uri)) == []
    (registration,) = client.registrations
    assert registration.method == types.WORKSPACE_DID_CHANGE_WATCHED_FILES
    assert sorted(w["globPattern"] for w in registration.register_options["watchers"]) == [
        "**/.gradlint.toml", "**/gradlint.toml", "**/pyproject.toml"]
    config.write_text('[tool.gradlint]\nignore = ["GL3"]\n')
    client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(changes=[
        types.FileEvent(uri=config.as_uri(), type=types.FileChangeType.Changed)]))
    assert [d.code for d in (await recorder.next(uri, 2)).diagnostics] == ["GL101"]
    # Without a notification, the next lint still sees the edited file.
    config.write_text('[tool.gradlint]\nignore = ["GL1"]\n  ')
    client.text_document_did_save(types.DidSaveTextDocumentParams(types.TextDocumentIdentifier(uri=uri)))
    assert _codes(await recorder.next(uri, 3)) == []


async def test_bad_configuration_is_shown_once_and_the_defaults_apply(client: LanguageClient, tmp_path: Path):
    recorder = Recorder(client)
    (tmp_path / "gradlint.toml").write_text('selekt = ["GL1"]\n')
    uri = _open(client, tmp_path / "train.py", CLIP_PER_MICRO_BATCH)
    assert [d.code for d in (await recorder.next(uri)).diagnostics] == ["GL101"]
    _replace_all(client, uri, 2, CLIP_PER_MICRO_BATCH)
    await recorder.next(uri, 2)
    errors = [m.message for m in client.messages if m.type == types.MessageType.Error]
    assert len(errors) == 1
    assert "gradlint.toml" in errors[0] and "selekt" in errors[0]
    assert errors[0].endswith("(using the default rules)")
