"""The language server's summary index of the workspace: a module's symbols, screen and function
summaries are kept by content digest, so re-linting a dependent does not read an unchanged helper
again, and an edited helper is read once more; a pulling client is asked to pull again (or pulls
again itself) and gets the dependent's new diagnostics."""

from __future__ import annotations

import asyncio
import shutil
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("pytest_lsp", reason="the language-server tests need the test extra (pytest-lsp)")

import pytest_lsp  # noqa: E402
from conftest import FIXTURES  # noqa: E402
from lsprotocol import types  # noqa: E402
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities  # noqa: E402

import gradlint.model.collect as collect  # noqa: E402
import gradlint.project.context as context  # noqa: E402
import gradlint.project.index as index  # noqa: E402
from gradlint.lsp.server import GradlintServer  # noqa: E402

SERVER = ClientServerConfig(server_command=[sys.executable, "-m", "gradlint", "lsp"])
TIMEOUT = 20
NO_STEP = "    optimizer.step()\n"


@pytest.fixture
def trainer(tmp_path: Path) -> Path:
    """A copy of the trainer package fixture (loop.py updates through helpers.apply_update)."""
    shutil.copytree(FIXTURES / "projects" / "trainer_package", tmp_path / "project")
    (tmp_path / "project" / ".git").mkdir()
    return tmp_path / "project" / "trainer"


@pytest.fixture
def computed(monkeypatch: pytest.MonkeyPatch) -> Counter[tuple[str, str]]:
    """How often each module's symbols and screen, and each unit's summary, are computed."""
    counts: Counter[tuple[str, str]] = Counter()
    read_symbols, screen, walker = index.read_symbols, context.screen, collect._Walker

    def counted_symbols(tree, path, root):  # type: ignore[no-untyped-def]
        counts["symbols", path.name] += 1
        return read_symbols(tree, path, root)

    def counted_screen(text, *args, **kwargs):  # type: ignore[no-untyped-def]
        counts["screen", text.splitlines()[0]] += 1
        return screen(text, *args, **kwargs)

    class CountedWalker(walker):  # type: ignore[misc, valid-type]
        def __init__(self, unit):  # type: ignore[no-untyped-def]
            counts["summary", unit.unit.name] += 1
            super().__init__(unit)

    monkeypatch.setattr(index, "read_symbols", counted_symbols)
    monkeypatch.setattr(context, "screen", counted_screen)
    monkeypatch.setattr(collect, "_Walker", CountedWalker)
    return counts


@pytest.fixture
def server() -> Iterator[GradlintServer]:
    found = GradlintServer()
    yield found
    found.lint_executor.shutdown()


def _codes(server: GradlintServer, path: Path, version: int, text: str | None = None) -> list[tuple[int, str]]:
    outcome = server._lint_job(path.as_uri(), version, text if text is not None else path.read_text())
    return [(d.span.line, d.code) for d in outcome.diagnostics]


HELPER_DOC = '"""The optimizer update, written once for every trainer: clip, step, zero."""'


def test_an_unchanged_helper_is_summarised_once_across_relints(
        server: GradlintServer, trainer: Path, computed: Counter[tuple[str, str]]) -> None:
    loop = trainer / "loop.py"
    for version in (1, 2, 3):
        assert _codes(server, loop, version) == [(15, "GL201")]
    assert computed["symbols", "helpers.py"] == 1
    assert computed["screen", HELPER_DOC] == 1
    assert computed["summary", "apply_update"] == 1
    assert computed["summary", "fit"] == 1


def test_an_edited_helper_is_summarised_again_once_and_its_dependent_changes(
        server: GradlintServer, trainer: Path, computed: Counter[tuple[str, str]]) -> None:
    loop, helpers = trainer / "loop.py", trainer / "helpers.py"
    assert _codes(server, loop, 1) == [(15, "GL201")]
    edited = helpers.read_text().replace(NO_STEP, "")
    assert _codes(server, helpers, 2, edited) == []  # the helper's buffer, as the server lints it
    for version in (2, 3):
        assert _codes(server, loop, version) == []  # no step in the helper: nothing accumulates
    assert computed["symbols", "helpers.py"] == 2
    assert computed["screen", HELPER_DOC] == 2
    assert computed["summary", "apply_update"] == 2
    assert computed["symbols", "loop.py"] == 1  # the dependent's own text did not change


# -- pull diagnostics: the dependent's diagnostics change after the helper is saved ----------

def _open(client: LanguageClient, path: Path) -> str:
    uri = path.as_uri()
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        types.TextDocumentItem(uri=uri, language_id="python", version=1, text=path.read_text(encoding="utf-8"))))
    return uri


async def _pull(client: LanguageClient, uri: str) -> list[tuple[int, str]]:
    report = await client.text_document_diagnostic_async(types.DocumentDiagnosticParams(
        text_document=types.TextDocumentIdentifier(uri=uri)))
    return [(d.range.start.line + 1, str(d.code)) for d in report.items]


async def _save_without_step(client: LanguageClient, helpers: Path, uri: str) -> None:
    text = helpers.read_text(encoding="utf-8").replace(NO_STEP, "")
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=2),
        content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)]))
    helpers.write_text(text, encoding="utf-8")
    client.text_document_did_save(types.DidSaveTextDocumentParams(types.TextDocumentIdentifier(uri=uri)))


async def _start(client: LanguageClient, root: Path, refresh: bool) -> None:
    capabilities = client_capabilities("neovim@v0.10.0")  # pull diagnostics
    if refresh:
        capabilities.workspace.diagnostics = types.DiagnosticWorkspaceClientCapabilities(refresh_support=True)
    client.refreshes = 0
    features = client.protocol.fm.features
    handler = features[types.WORKSPACE_DIAGNOSTIC_REFRESH]

    def counted(params: None) -> None:
        client.refreshes += 1
        return handler(params)

    features[types.WORKSPACE_DIAGNOSTIC_REFRESH] = counted
    result = await client.initialize_session(types.InitializeParams(capabilities=capabilities, root_uri=root.as_uri()))
    client.diagnostic_options = result.capabilities.diagnostic_provider


@pytest_lsp.fixture(config=SERVER)
async def refreshing_client(lsp_client: LanguageClient, trainer: Path):
    """A pull client that takes ``workspace/diagnostic/refresh`` requests."""
    await _start(lsp_client, trainer.parent, refresh=True)
    yield
    await lsp_client.shutdown_session()


@pytest_lsp.fixture(config=SERVER)
async def pull_client(lsp_client: LanguageClient, trainer: Path):
    """A pull client without refresh support (Neovim 0.10's capabilities)."""
    await _start(lsp_client, trainer.parent, refresh=False)
    yield
    await lsp_client.shutdown_session()


@pytest.mark.asyncio(loop_scope="function")
@pytest.mark.filterwarnings("error::pytest_lsp.LspSpecificationWarning")
async def test_a_saved_helper_makes_the_server_ask_for_a_new_pull_of_its_dependent(
        refreshing_client: LanguageClient, trainer: Path) -> None:
    client = refreshing_client
    assert client.diagnostic_options.inter_file_dependencies is True  # an edit may change other files' diagnostics
    loop, helpers = _open(client, trainer / "loop.py"), _open(client, trainer / "helpers.py")
    assert await _pull(client, loop) == [(15, "GL201")]
    assert await _pull(client, helpers) == []
    await _save_without_step(client, trainer / "helpers.py", helpers)
    assert await _pull(client, helpers) == []  # the client pulls the document it edited
    await asyncio.wait_for(_until_refreshed(client), TIMEOUT)
    assert client.refreshes == 1
    assert await _pull(client, loop) == []  # what the refresh asks for: the dependent changed


async def _until_refreshed(client: LanguageClient) -> None:
    while not client.refreshes:
        await asyncio.sleep(0.02)


@pytest.mark.asyncio(loop_scope="function")
@pytest.mark.filterwarnings("error::pytest_lsp.LspSpecificationWarning")
async def test_a_client_that_pulls_again_after_a_save_gets_the_dependents_new_diagnostics(
        pull_client: LanguageClient, trainer: Path) -> None:
    client = pull_client
    loop, helpers = _open(client, trainer / "loop.py"), _open(client, trainer / "helpers.py")
    assert await _pull(client, loop) == [(15, "GL201")]
    await _save_without_step(client, trainer / "helpers.py", helpers)
    assert await _pull(client, loop) == []
    assert client.refreshes == 0  # never asked: it cannot take the request
