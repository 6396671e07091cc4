"""The language server carries the loss-contract, AMP-scaler and training-state rules: each is
published at its line with its severity (GL502's ``info`` as ``Information``), a rule off by
default once the workspace selects it."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("pytest_lsp", reason="the language-server tests need the test extra (pytest-lsp)")

import pytest_lsp  # noqa: E402
from lsprotocol import types  # noqa: E402
from pytest_lsp import LanguageClient  # noqa: E402
from test_lsp import SERVER, Recorder, _open, _start  # noqa: E402
from test_training_state_formats import EXPECTED, SELECT, SOURCE  # noqa: E402

pytestmark = [pytest.mark.asyncio(loop_scope="function"),
              pytest.mark.filterwarnings("error::pytest_lsp.LspSpecificationWarning")]

SEVERITY = {"error": types.DiagnosticSeverity.Error, "warning": types.DiagnosticSeverity.Warning,
            "info": types.DiagnosticSeverity.Information}


@pytest_lsp.fixture(config=SERVER)
async def client(lsp_client: LanguageClient, tmp_path: Path):
    (tmp_path / "pyproject.toml").write_text(f'[tool.gradlint]\nselect = {SELECT.split(",")!r}\n'.replace("'", '"'))
    await _start(lsp_client, "visual-studio-code@v1.65.2", tmp_path)
    yield
    await lsp_client.shutdown_session()


async def test_every_rule_is_published_with_its_severity(client: LanguageClient, tmp_path: Path):
    recorder = Recorder(client)
    uri = _open(client, tmp_path / "train.py", SOURCE)
    published = await recorder.next(uri)
    found = {(str(d.code), d.range.start.line + 1, d.severity) for d in published.diagnostics}
    assert found == {(code, line, SEVERITY[severity]) for code, line, severity in EXPECTED}
