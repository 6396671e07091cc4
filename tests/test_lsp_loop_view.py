"""Inlay hints and hovers that show how gradlint reads a loop (pytest-lsp, a real server)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytest.importorskip("pytest_lsp", reason="the language-server tests need the test extra (pytest-lsp)")

import pytest_lsp  # noqa: E402
from lsprotocol import types  # noqa: E402
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities  # noqa: E402

pytestmark = [pytest.mark.asyncio(loop_scope="module"),
              pytest.mark.filterwarnings("error::pytest_lsp.LspSpecificationWarning")]

SERVER = ClientServerConfig(server_command=[sys.executable, "-m", "gradlint", "lsp"])

GATED = """\
def train(model, loader, optimizer, args):
    for step, batch in enumerate(loader):
        loss = model(batch) / args.accum
        loss.backward()
        if (step + 1) % args.accum == 0:
            optimizer.step()
            optimizer.zero_grad()
"""


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("lsp-loops")


@pytest_lsp.fixture(config=SERVER, scope="module")
async def client(lsp_client: LanguageClient, root: Path):
    result = await lsp_client.initialize_session(types.InitializeParams(
        capabilities=client_capabilities("neovim@v0.10.0"), root_uri=root.as_uri()))
    lsp_client.server_capabilities = result.capabilities
    yield
    await lsp_client.shutdown_session()


def _open(client: LanguageClient, path: Path, text: str) -> str:
    path.write_text(text)
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        types.TextDocumentItem(uri=path.as_uri(), language_id="python", version=1, text=text)))
    return path.as_uri()


def _whole(text: str) -> types.Range:
    return types.Range(types.Position(0, 0), types.Position(len(text.splitlines()), 0))


async def test_server_offers_inlay_hints(client: LanguageClient) -> None:
    assert client.server_capabilities.inlay_hint_provider is not None


async def test_inlay_hints_mark_each_training_call(client: LanguageClient, root: Path) -> None:
    uri = _open(client, root / "gated.py", GATED)
    hints = await client.text_document_inlay_hint_async(types.InlayHintParams(
        text_document=types.TextDocumentIdentifier(uri=uri), range=_whole(GATED)))
    assert hints is not None
    found = [(h.position.line, h.position.character, h.label) for h in hints]
    assert found == [(3, 23, "micro"), (5, 28, "update"), (6, 33, "update")]
    assert hints[0].tooltip == "runs once per micro-batch of the window gated at line 5, N = `args.accum`"
    assert all(h.padding_left for h in hints)


async def test_inlay_hints_only_in_the_range_asked(client: LanguageClient, root: Path) -> None:
    uri = _open(client, root / "ranged.py", GATED)
    hints = await client.text_document_inlay_hint_async(types.InlayHintParams(
        text_document=types.TextDocumentIdentifier(uri=uri),
        range=types.Range(types.Position(5, 0), types.Position(5, 40))))
    assert [(h.position.line, h.label) for h in hints or []] == [(5, "update")]


async def test_no_hints_without_a_training_loop(client: LanguageClient, root: Path) -> None:
    text = "def f(x):\n    return x.step()\n"
    uri = _open(client, root / "plain.py", text)
    hints = await client.text_document_inlay_hint_async(types.InlayHintParams(
        text_document=types.TextDocumentIdentifier(uri=uri), range=_whole(text)))
    assert not hints


async def test_hover_of_a_training_call_says_how_often_it_runs(client: LanguageClient, root: Path) -> None:
    uri = _open(client, root / "hover.py", GATED)
    hover = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(3, 12)))
    assert hover is not None and isinstance(hover.contents, types.MarkupContent)
    assert hover.contents.value.splitlines()[0] == (
        "`loss.backward()` (backward): runs once per micro-batch of the window gated at line 5, N = `args.accum`")
    step = await client.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=uri), position=types.Position(5, 14)))
    assert step is not None and isinstance(step.contents, types.MarkupContent)
    assert step.contents.value.startswith(
        "`optimizer.step()` (step): runs once per update, at the boundary, N = `args.accum`")
