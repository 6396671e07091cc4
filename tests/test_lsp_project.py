"""The language server and the project: what a loop finds in a helper module is published under
the helper's URI, and editing (or saving) a helper re-lints the open documents that use it."""

from __future__ import annotations

import asyncio
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

pytest.importorskip("pytest_lsp", reason="the language-server tests need the test extra (pytest-lsp)")

import pytest_lsp  # noqa: E402
from conftest import FIXTURES  # noqa: E402
from lsprotocol import types  # noqa: E402
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities  # noqa: E402

pytestmark = [pytest.mark.asyncio(loop_scope="function"),
              pytest.mark.filterwarnings("error::pytest_lsp.LspSpecificationWarning")]

SERVER = ClientServerConfig(server_command=[sys.executable, "-m", "gradlint", "lsp"])
TIMEOUT = 20
Published = list[tuple[int, str]]


@pytest_lsp.fixture(config=SERVER)
async def client(lsp_client: LanguageClient, tmp_path: Path):
    """A push-diagnostics client (VS Code 1.65's capabilities) on a copy of the fixture projects."""
    shutil.copytree(FIXTURES / "projects", tmp_path / "projects")
    for project in (tmp_path / "projects").iterdir():
        (project / ".git").mkdir()
    lsp_client.published = {}

    features = lsp_client.protocol.fm.features
    handler = features[types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS]

    def record(params: types.PublishDiagnosticsParams) -> None:
        lsp_client.published.setdefault(params.uri, []).append(
            [(d.range.start.line + 1, str(d.code)) for d in params.diagnostics])
        handler(params)

    features[types.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS] = record

    @lsp_client.feature(types.CLIENT_REGISTER_CAPABILITY)
    def register(params: types.RegistrationParams) -> None:
        return None

    await lsp_client.initialize_session(types.InitializeParams(
        capabilities=client_capabilities("visual-studio-code@v1.65.2"), root_uri=tmp_path.as_uri()))
    yield
    await lsp_client.shutdown_session()


def _open(client: LanguageClient, path: Path) -> str:
    uri = path.as_uri()
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        types.TextDocumentItem(uri=uri, language_id="python", version=1, text=path.read_text(encoding="utf-8"))))
    return uri


def _change(client: LanguageClient, uri: str, version: int, text: str) -> None:
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
        content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)]))


async def _until(client: LanguageClient, uri: str, wanted: Callable[[Published], bool]) -> Published:
    """Wait until the last publication for ``uri`` is ``wanted``; return it."""
    async def arrived() -> Published:
        while not (client.published.get(uri) and wanted(client.published[uri][-1])):
            await asyncio.sleep(0.02)
        return client.published[uri][-1]

    return await asyncio.wait_for(arrived(), TIMEOUT)


async def test_a_loops_defects_in_an_open_helper_are_published_under_the_helpers_uri(
        client: LanguageClient, tmp_path: Path):
    project = tmp_path / "projects" / "helper_defects"
    steps = _open(client, project / "steps.py")
    main = _open(client, project / "main.py")
    assert await _until(client, main, lambda p: p == [(12, "GL202")]) == [(12, "GL202")]
    # the helper's own lint finds its update-only GL305 too (model/update_scope.py): the same two, in any order
    assert sorted(await _until(client, steps, lambda p: len(p) == 2)) == [(5, "GL104"), (9, "GL305")]
    fixed = (project / "steps.py").read_text(encoding="utf-8").replace(
        "    optimizer.zero_grad()  # expect: GL305\n    optimizer.step()\n",
        "    optimizer.step()\n    optimizer.zero_grad()\n")
    _change(client, steps, 2, fixed)  # the helper's unsaved buffer: the loop is linted again with it
    assert await _until(client, steps, lambda p: p == [(5, "GL104")]) == [(5, "GL104")]
    client.text_document_did_close(types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(uri=main)))
    assert await _until(client, steps, lambda p: p == []) == []  # no open loop reaches it any more


async def test_editing_a_helper_re_lints_the_open_documents_that_use_it(client: LanguageClient, tmp_path: Path):
    """loop.py's backward is unscaled only because helpers.py steps: once the helper's buffer no
    longer steps, loop.py (not edited) is linted again and has nothing left to report."""
    project = tmp_path / "projects" / "trainer_package" / "trainer"
    loop = _open(client, project / "loop.py")
    assert await _until(client, loop, lambda p: p == [(15, "GL201")]) == [(15, "GL201")]
    helpers = _open(client, project / "helpers.py")
    await _until(client, helpers, lambda p: p == [])
    before = len(client.published[loop])
    text = (project / "helpers.py").read_text(encoding="utf-8").replace("    optimizer.step()\n", "")
    _change(client, helpers, 2, text)
    assert await _until(client, loop, lambda p: p == []) == []
    assert len(client.published[loop]) == before + 1
    (project / "helpers.py").write_text(text, encoding="utf-8")
    client.text_document_did_save(types.DidSaveTextDocumentParams(types.TextDocumentIdentifier(uri=helpers)))
    await asyncio.sleep(0.5)
    assert client.published[loop][-1] == []


async def test_a_module_rules_finding_in_an_open_helper_is_published_under_the_helpers_uri(
        client: LanguageClient, tmp_path: Path):
    """GL501 of a save helper in another module (and GL206 of a loss function given to the
    Trainer from another module) reach the helper's URI while the caller is open."""
    project = tmp_path / "projects" / "loss_contracts"
    helper = _open(client, project / "sharded_checkpoint.py")
    loop = _open(client, project / "sharded_loop.py")
    assert await _until(client, helper, lambda p: p == [(10, "GL501")]) == [(10, "GL501")]
    assert await _until(client, loop, lambda p: True) == []
    losses = _open(client, project / "kl_losses.py")
    _open(client, project / "kl_trainer.py")
    assert await _until(client, losses, lambda p: p == [(9, "GL206")]) == [(9, "GL206")]
    client.text_document_did_close(types.DidCloseTextDocumentParams(types.TextDocumentIdentifier(uri=loop)))
    assert await _until(client, helper, lambda p: p == []) == []
