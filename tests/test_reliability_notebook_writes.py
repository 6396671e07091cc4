"""Notebook writes lose nothing: ``--fix`` and ``--add-noqa`` change the text of the fixed
cell's ``source`` and keep every other byte of the file (BOM, indentation, key order,
separators, escaping of non-ASCII text, line breaks, trailing newline), whichever tool wrote
the notebook."""

from __future__ import annotations

import codecs
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import FIXTURES
from samples import gradlint

CLIP = "            torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)\n"
CLIP_MOVED = "        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)\n"
COMMENT = "    # étape ① : une mise à jour\n"  # non-ASCII text inside the cell that is fixed


def _document() -> dict[str, Any]:
    document = json.loads((FIXTURES / "notebooks" / "accumulation.ipynb").read_text(encoding="utf-8"))
    source = document["cells"][4]["source"]
    assert source[1].startswith("def train(") and source.count(CLIP) == 1
    source.insert(2, COMMENT)
    return document


def _fixed(document: dict[str, Any]) -> dict[str, Any]:
    """The document as the GL101 fix leaves it: the clip moved to just before the step."""
    fixed = json.loads(json.dumps(document))
    source = fixed["cells"][4]["source"]
    source.remove(CLIP)
    step = source.index("        optimizer.step()\n")
    source.insert(step, CLIP_MOVED)
    return fixed


def _noqa(document: dict[str, Any]) -> dict[str, Any]:
    changed = json.loads(json.dumps(document))
    source = changed["cells"][4]["source"]
    source[source.index(CLIP)] = CLIP.rstrip("\n") + "  # noqa: GL101\n"
    return changed


def _as_string(document: dict[str, Any]) -> dict[str, Any]:
    changed = json.loads(json.dumps(document))
    changed["cells"][4]["source"] = "".join(changed["cells"][4]["source"])
    return changed


Dump = Callable[[dict[str, Any]], str]
STYLES: dict[str, Dump] = {
    "jupyter-indent-1": lambda d: json.dumps(d, indent=1, ensure_ascii=False) + "\n",
    "indent-2-ascii-escaped": lambda d: json.dumps(d, indent=2) + "\n",
    "indent-4-sorted-keys": lambda d: json.dumps(d, indent=4, sort_keys=True, ensure_ascii=False),
    "tab-indent": lambda d: json.dumps(d, indent="\t", ensure_ascii=False) + "\n\n",
    "one-line": lambda d: json.dumps(d, ensure_ascii=False),
    "compact-escaped": lambda d: json.dumps(d, separators=(",", ":")) + "\n",
    "crlf": lambda d: json.dumps(d, indent=1, ensure_ascii=False).replace("\n", "\r\n") + "\r\n",
    "odd-spacing": lambda d: json.dumps(d, indent=1, ensure_ascii=False).replace(
        '"nbformat": 4', '"nbformat"  :\n\t4 ').replace('"metadata": {}', '"metadata" : { }'),
}


def _write(path: Path, text: str, bom: bool) -> None:
    path.write_bytes((codecs.BOM_UTF8 if bom else b"") + text.encode("utf-8"))


@pytest.mark.parametrize("bom", [False, True], ids=["no-bom", "bom"])
@pytest.mark.parametrize("style", sorted(STYLES))
def test_fix_keeps_every_byte_outside_the_fixed_cell(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                     style: str, bom: bool) -> None:
    monkeypatch.chdir(tmp_path)
    dump = STYLES[style]
    document = _document()
    _write(tmp_path / "nb.ipynb", dump(document), bom)
    result = gradlint("check", "--fix", "--format", "concise", "nb.ipynb")
    assert (result.exit_code, result.stdout) == (0, "Found 1 problem (1 fixed, 0 remaining).\n"), result.stderr
    expected = (codecs.BOM_UTF8 if bom else b"") + dump(_fixed(document)).encode("utf-8")
    assert (tmp_path / "nb.ipynb").read_bytes() == expected


@pytest.mark.parametrize("style", ["jupyter-indent-1", "indent-2-ascii-escaped", "one-line"])
def test_fix_keeps_a_source_that_is_one_string_a_string(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                        style: str) -> None:
    monkeypatch.chdir(tmp_path)
    dump = STYLES[style]
    document = _as_string(_document())
    (tmp_path / "nb.ipynb").write_text(dump(document), encoding="utf-8")
    assert gradlint("check", "--fix", "nb.ipynb").exit_code == 0
    assert (tmp_path / "nb.ipynb").read_text(encoding="utf-8") == dump(_as_string(_fixed(_document())))


@pytest.mark.parametrize("style", ["jupyter-indent-1", "indent-2-ascii-escaped", "compact-escaped", "crlf"])
def test_add_noqa_keeps_the_bom_and_every_byte_outside_the_cell(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                style: str) -> None:
    monkeypatch.chdir(tmp_path)
    dump = STYLES[style]
    document = _document()
    _write(tmp_path / "nb.ipynb", dump(document), bom=True)
    result = gradlint("check", "--add-noqa", "nb.ipynb")
    assert result.stdout == "Added 1 noqa directive.\n", result.stderr
    assert (tmp_path / "nb.ipynb").read_bytes() == codecs.BOM_UTF8 + dump(_noqa(document)).encode("utf-8")
    assert gradlint("check", "nb.ipynb").exit_code == 0


def test_a_form_feed_in_a_fixed_cell_does_not_split_its_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Lines of a list source end at ``\\n`` only (``str.splitlines`` would also cut at a
    form feed and make two list items of one line)."""
    monkeypatch.chdir(tmp_path)
    document = _document()
    source = document["cells"][4]["source"]
    source[2] = "    # a\x0cb\u2028c\n"
    (tmp_path / "nb.ipynb").write_text(STYLES["jupyter-indent-1"](document), encoding="utf-8")
    assert gradlint("check", "--fix", "nb.ipynb").exit_code == 0
    fixed = _fixed(document)
    assert (tmp_path / "nb.ipynb").read_text(encoding="utf-8") == STYLES["jupyter-indent-1"](fixed)


def test_the_source_values_are_found_where_json_reads_them() -> None:
    """A key given twice counts the last time (as for ``json.loads``), cells that are not
    objects keep their number, and strings holding braces, brackets and quotes are skipped."""
    from gradlint.notebook_json import source_values

    raw = ('{"cells": [], "meta": "}]\\"[{", "cells" : [ 7, {"source": "a", "x": {"source": "no"},'
           ' "source" :\n  ["b\\n", "c"] }, {"cell_type": "code"} ] }')
    document = json.loads(raw)
    found = source_values(raw)
    assert sorted(found) == [2]
    value = found[2]
    assert json.loads(raw[value.start:value.end]) == document["cells"][1]["source"] == ["b\n", "c"]
    assert value.key_space == " "
