"""benchmarks/corpus.py's index fallback: an archive fetched straight from the package index
(PEP 691 JSON), matched by project and version, and refused when its sha256 differs."""

from __future__ import annotations

import hashlib
import io
import json
import sys
from pathlib import Path
from typing import Any

import pytest

BENCH = Path(__file__).resolve().parent.parent / "benchmarks"
sys.path.insert(0, str(BENCH))

import corpus  # noqa: E402

SDIST = b"sdist bytes"
WHEEL = b"wheel bytes"


def _index(sdist_hash: str) -> dict[str, Any]:
    base = "https://files.example/"
    return {"files": [
        {"filename": "my_pkg-1.20.tar.gz", "url": base + "other", "hashes": {}},
        {"filename": "my_pkg-1.2-py3-none-any.whl", "url": base + "whl",
         "hashes": {"sha256": hashlib.sha256(WHEEL).hexdigest()}},
        {"filename": "my-pkg-1.2.tar.gz", "url": base + "sdist", "hashes": {"sha256": sdist_hash}},
    ]}


def _serve(monkeypatch: pytest.MonkeyPatch, sdist_hash: str) -> list[str]:
    asked: list[str] = []

    def urlopen(request: Any, timeout: float = 0) -> io.BytesIO:
        url = request if isinstance(request, str) else request.full_url
        asked.append(url)
        if url == f"{corpus.INDEX_URL}/my-pkg/":
            return io.BytesIO(json.dumps(_index(sdist_hash)).encode())
        bodies = {"other": b"other", "whl": WHEEL, "sdist": SDIST}
        return io.BytesIO(bodies[url.rsplit("/", 1)[1]])

    monkeypatch.setattr(corpus.urllib.request, "urlopen", urlopen)
    return asked


def test_fetches_the_sdist_of_the_pinned_version(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    asked = _serve(monkeypatch, hashlib.sha256(SDIST).hexdigest())
    got = corpus.fetch_from_index(corpus.Package("My.Pkg", "1.2", "", sdist=True), tmp_path)
    assert got == tmp_path / "my-pkg-1.2.tar.gz"
    assert got.read_bytes() == SDIST
    assert asked == [f"{corpus.INDEX_URL}/my-pkg/", "https://files.example/sdist"]


def test_a_hash_mismatch_is_refused(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _serve(monkeypatch, "f" * 64)
    assert corpus.fetch_from_index(corpus.Package("my-pkg", "1.2", "", sdist=True), tmp_path) is None
    assert list(tmp_path.iterdir()) == []
    # an index entry without a hash is taken as it is
    got = corpus.fetch_from_index(corpus.Package("my-pkg", "1.20", "", sdist=True), tmp_path)
    assert got == tmp_path / "my_pkg-1.20.tar.gz"
    assert got.read_bytes() == b"other"


def test_a_wheel_when_the_labels_ask_for_one(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _serve(monkeypatch, "")
    got = corpus.fetch_from_index(corpus.Package("my_pkg", "1.2", "", sdist=False), tmp_path)
    assert got == tmp_path / "my_pkg-1.2-py3-none-any.whl"
    assert got.read_bytes() == WHEEL


def test_an_unreachable_index_gives_none(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    def urlopen(request: Any, timeout: float = 0) -> io.BytesIO:
        raise OSError("no route")

    monkeypatch.setattr(corpus.urllib.request, "urlopen", urlopen)
    assert corpus.fetch_from_index(corpus.Package("my-pkg", "1.2", "", sdist=True), tmp_path) is None
