"""The rule documents' examples are tested: each "Example" is reported with exactly its
own rule's code, each "Use instead" is clean, and every rule has a document."""

from __future__ import annotations

import re

import pytest

from conftest import ROOT, lint
from gradlint.rule_docs import parse_doc
from gradlint.catalogue import CATALOGUE
from gradlint.settings import Settings

DOCS = sorted((ROOT / "rules").glob("GL*.md"))
_BLOCK = re.compile(r"```python\n(.*?)```", re.DOTALL)
EVERYTHING = Settings(select=frozenset(CATALOGUE))


def _block(markdown: str, title: str) -> str | None:
    doc = parse_doc(markdown)
    blocks = _BLOCK.findall(doc.section(title))
    assert len(blocks) <= 1, f"more than one python block under '## {title}'"
    return blocks[0] if blocks else None


def test_every_rule_has_a_document() -> None:
    assert {p.stem for p in DOCS} == set(CATALOGUE)


@pytest.mark.parametrize("path", DOCS, ids=lambda p: p.stem)
def test_example_is_reported_with_its_own_code_only(path) -> None:
    example = _block(path.read_text(encoding="utf-8"), "Example")
    assert example is not None
    codes = {code for _, code in lint(example, f"{path.stem}_example.py", EVERYTHING)}
    assert codes == {path.stem}


@pytest.mark.parametrize("path", DOCS, ids=lambda p: p.stem)
def test_use_instead_is_clean(path) -> None:
    good = _block(path.read_text(encoding="utf-8"), "Use instead")
    if path.stem == "GL000":
        assert good is None  # there is no "correct" form of an unparsable file
        return
    assert good is not None
    assert lint(good, f"{path.stem}_good.py", EVERYTHING) == []
