"""Notebooks: linted cell by cell, reported by cell, fixed in place, through the real CLI."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from conftest import FIXTURES
from gradlint.notebook import NotebookError, read_notebook, write_cells
from samples import BAD, gradlint

NOTEBOOK = FIXTURES / "notebooks" / "accumulation.ipynb"
CLIP_MESSAGE = "torch.nn.utils.clip_grad_norm_() runs on every micro-batch; clip once, just before optimizer.step()"


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    shutil.copy(NOTEBOOK, tmp_path / "nb.ipynb")
    return tmp_path


def test_text_output_names_the_cell(project: Path) -> None:
    result = gradlint("check", "--format", "text", "nb.ipynb")
    assert result.exit_code == 1
    assert result.stdout == f"nb.ipynb:cell 5:9:13: GL101 {CLIP_MESSAGE}\nFound 1 problem in 1 file.\n"


def test_json_output_has_a_cell_key_and_cell_positions(project: Path) -> None:
    (project / "plain.py").write_text(BAD)
    data = json.loads(gradlint("check", "--format", "json", "--select", "GL101", ".").stdout)
    assert [(d["path"], d.get("cell"), d["line"], d["column"], d["code"]) for d in data] == [
        ("nb.ipynb", 5, 9, 13, "GL101"), ("plain.py", None, 12, 13, "GL101")]
    assert "cell" not in data[1]
    edits = data[0]["fix"]["edits"]
    assert [(e["line"], e["column"], e["end_line"], e["end_column"]) for e in edits] == [(9, 1, 10, 1), (10, 1, 10, 1)]


def test_full_output_shows_the_cell_source(project: Path) -> None:
    lines = gradlint("check", "--format", "full", "nb.ipynb").stdout.splitlines()
    assert lines[0].startswith("nb.ipynb:cell 5:9:13: GL101")
    assert " 9 |             torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)" in lines
    assert "11 |         optimizer.zero_grad()" in lines


def test_discovery_includes_notebooks(project: Path) -> None:
    result = gradlint("check", "--format", "text", ".")
    assert result.stdout.splitlines()[-1] == "Found 1 problem in 1 file."


def test_fix_rewrites_only_the_fixed_cell(project: Path) -> None:
    before = (project / "nb.ipynb").read_text(encoding="utf-8")
    result = gradlint("check", "--fix", "--format", "text", "nb.ipynb")
    assert result.exit_code == 0
    after = (project / "nb.ipynb").read_text(encoding="utf-8")
    removed = '    "            torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)\\n",\n'
    added = '    "        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)\\n",\n'
    assert before.count(removed) == 1
    assert after == before.replace(removed, "").replace(
        '    "        optimizer.step()\\n",\n', added + '    "        optimizer.step()\\n",\n')
    cells = json.loads(after)["cells"]
    assert cells[1]["source"][:2] == ["!pip install -q torch\n", "%matplotlib inline\n"]
    assert cells[4]["source"][0] == "%%time\n"
    assert gradlint("check", "nb.ipynb").exit_code == 0


def test_add_noqa_writes_into_the_cell(project: Path) -> None:
    result = gradlint("check", "--add-noqa", "nb.ipynb")
    assert result.stdout == "Added 1 noqa directive.\n"
    source = json.loads((project / "nb.ipynb").read_text(encoding="utf-8"))["cells"][4]["source"]
    assert source[8] == "            torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)  # noqa: GL101\n"
    assert gradlint("check", "nb.ipynb").exit_code == 0


def test_magics_are_masked_and_shell_cells_skipped(project: Path) -> None:
    notebook = json.loads(NOTEBOOK.read_text(encoding="utf-8"))
    notebook["cells"].insert(1, {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [],
                                 "source": ["%%bash\n", "for x in 1 2; do echo $x; done"]})
    notebook["cells"][2]["source"].append('\nfiles = !ls\nmodel?\nmsg = ("lr %.4f"\n       % 3e-4)')
    (project / "nb.ipynb").write_text(json.dumps(notebook, indent=1))
    result = gradlint("check", "--format", "text", "nb.ipynb")
    assert result.stdout == f"nb.ipynb:cell 6:9:13: GL101 {CLIP_MESSAGE}\nFound 1 problem in 1 file.\n"


def test_a_broken_notebook_is_gl000_and_the_run_goes_on(project: Path) -> None:
    (project / "broken.ipynb").write_text('{"cells": [ {"cell_type": "code", "source": "loss.backward()"')
    result = gradlint("check", "--format", "text", ".")
    assert result.stdout.splitlines()[0].startswith("broken.ipynb:1:1: GL000 not a notebook: invalid JSON")
    assert result.stdout.splitlines()[1].startswith("nb.ipynb:cell 5:9:13: GL101")


@pytest.mark.parametrize("indent", [1, 2, 4])
def test_unchanged_notebooks_round_trip_byte_for_byte(indent: int) -> None:
    raw = json.dumps(json.loads(NOTEBOOK.read_text(encoding="utf-8")), indent=indent, ensure_ascii=False) + "\n"
    assert write_cells(read_notebook(raw), {}) == raw


def test_not_a_notebook() -> None:
    with pytest.raises(NotebookError):
        read_notebook("[]")
