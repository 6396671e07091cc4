"""The language server under hostile clients, spoken to raw over stdio (pytest-lsp's typed
client cannot send broken messages): garbage and truncated messages, unknown documents,
out-of-range positions, out-of-order versions. Every request is answered (with an error
where it deserves one), JSON that is no request gets an error with id null, and the server
keeps serving. See tests/test_lsp.py for the malformed-params and unknown-method cases."""

from __future__ import annotations

import itertools
import json
import queue
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("pygls", reason="the language server needs the lsp extra (pygls)")

WAIT = 30  # seconds before a missing answer fails the test (a liveness bound, not a timing)
LOOP = """\
import torch


def train(model, windows, optimizer):
    for window in windows:
        for batch in window:
            loss = model(batch) / len(window)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)  # noqa: GL101
        optimizer.step()
        optimizer.zero_grad()
"""


class RawClient:
    """A JSON-RPC peer over the server's stdin/stdout that sends whatever it is given."""

    def __init__(self, cwd: Path) -> None:
        self.process = subprocess.Popen([sys.executable, "-m", "gradlint", "lsp"], cwd=cwd, stdin=subprocess.PIPE,
                                        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        self.messages: queue.Queue[dict | None] = queue.Queue()
        self.unclaimed: list[dict] = []
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        stream = self.process.stdout
        while True:
            length = None
            while True:
                line = stream.readline()
                if not line:
                    self.messages.put(None)
                    return
                if not line.strip():
                    break
                name, _, value = line.decode("ascii").partition(":")
                if name.lower() == "content-length":
                    length = int(value)
            self.messages.put(json.loads(stream.read(length)))

    def frame(self, body: bytes) -> None:
        self.raw(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    def raw(self, data: bytes) -> None:
        self.process.stdin.write(data)
        self.process.stdin.flush()

    def send(self, message: dict) -> None:
        self.frame(json.dumps(message).encode())

    def notify(self, method: str, params: Any) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def request(self, msg_id: int, method: str, params: Any) -> dict:
        self.send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        return self.wait(lambda m: m.get("id") == msg_id and "method" not in m)

    def wait(self, wanted) -> dict:
        """The first message (received or still to come) that ``wanted`` accepts."""
        for index, message in enumerate(self.unclaimed):
            if wanted(message):
                return self.unclaimed.pop(index)
        while True:
            message = self.messages.get(timeout=WAIT)
            assert message is not None, "the server closed its output"
            if wanted(message):
                return message
            self.unclaimed.append(message)

    def published(self, uri: str) -> dict:
        return self.wait(lambda m: m.get("method") == "textDocument/publishDiagnostics"
                         and m["params"]["uri"] == uri)["params"]


def _session(root: Path) -> Iterator[RawClient]:
    """An initialized server working in ``root``, killed afterwards."""
    peer = RawClient(root)
    answer = peer.request(1, "initialize", {"processId": None, "rootUri": root.as_uri(), "capabilities": {}})
    assert "capabilities" in answer["result"]
    peer.notify("initialized", {})
    yield peer
    peer.process.kill()
    peer.process.wait(timeout=WAIT)
    peer.process.stdin.close()
    peer.process.stdout.close()


@pytest.fixture
def client(tmp_path: Path) -> Iterator[RawClient]:
    yield from _session(tmp_path)


@pytest.fixture(scope="module")
def shared_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("shared-server")


@pytest.fixture(scope="module")
def shared(shared_root: Path) -> Iterator[RawClient]:
    """One server for the cases of a parametrized test: each case must leave it serving the
    next (a server per case would only start cost; the cases share nothing but the server)."""
    yield from _session(shared_root)


_CASES = itertools.count(1)


def _document(root: Path) -> Path:
    """A path no earlier case of the shared server opened."""
    return root / f"train_{next(_CASES)}.py"


def _open(client: RawClient, path: Path, text: str, version: int = 1) -> str:
    uri = path.as_uri()
    client.notify("textDocument/didOpen", {"textDocument": {"uri": uri, "languageId": "python", "version": version,
                                                            "text": text}})
    return uri


def _hover(client: RawClient, msg_id: int, uri: str, line: int, character: int) -> dict:
    return client.request(msg_id, "textDocument/hover", {"textDocument": {"uri": uri},
                                                          "position": {"line": line, "character": character}})


def _serves(client: RawClient, uri: str, msg_id: int) -> None:
    """A hover on the ``GL101`` of the noqa comment is answered with the rule's document."""
    line = LOOP.split("\n")[8]
    answer = _hover(client, msg_id, uri, 8, line.index("GL101") + 1)
    assert answer["result"]["contents"]["value"].startswith("# GL101: clip-per-micro-batch")


def _error(message: dict) -> tuple[Any, int]:
    return message.get("id"), message["error"]["code"]


@pytest.mark.parametrize(("body", "code"), [
    (b'{"jsonrpc": "2.0", "id": 7, "meth', -32700),
    (b"\xff\xfe garbage", -32700),
    (b"[]", -32600),
    (b"42", -32600),
    (b"null", -32600),
    (b'"textDocument/hover"', -32600),
], ids=["truncated-json", "not-utf8", "array", "number", "null", "string"])
def test_a_body_that_is_no_message_gets_an_error_with_id_null(shared: RawClient, shared_root: Path, body: bytes,
                                                              code: int) -> None:
    uri = _open(shared, _document(shared_root), LOOP)
    shared.frame(body)
    assert _error(shared.wait(lambda m: "error" in m and m.get("id") is None)) == (None, code)
    _serves(shared, uri, 2)


def test_a_wrong_content_length_costs_one_message_not_the_session(client: RawClient, tmp_path: Path) -> None:
    """The declared length is longer than the body: the reader takes the start of the next
    message as the rest of it. That message is lost; the ones after it are answered."""
    uri = _open(client, tmp_path / "train.py", LOOP)
    client.raw(b'Content-Length: 40\r\n\r\n{"jsonrpc": "2.0", "method": "x"}')
    client.send({"jsonrpc": "2.0", "id": 2, "method": "textDocument/hover",
                 "params": {"textDocument": {"uri": uri}, "position": {"line": 0, "character": 0}}})
    _serves(client, uri, 3)


def test_lines_of_garbage_and_empty_messages_between_messages_are_skipped(client: RawClient, tmp_path: Path) -> None:
    uri = _open(client, tmp_path / "train.py", LOOP)
    client.raw(b"GARBAGE\r\nX-Other-Header: 1\r\n\r\n")
    client.frame(b"")
    _serves(client, uri, 2)


@pytest.mark.parametrize("method", ["textDocument/hover", "textDocument/codeAction", "textDocument/diagnostic"])
@pytest.mark.parametrize("uri", ["file:///nonexistent/folder/x.py", "untitled:Untitled-1"])
def test_requests_for_unknown_documents_are_answered_with_an_error(shared: RawClient, shared_root: Path, method: str,
                                                                    uri: str) -> None:
    known = _open(shared, _document(shared_root), LOOP)
    whole = {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}}
    params = {"textDocument": {"uri": uri}, "position": {"line": 0, "character": 0}, "range": whole,
              "context": {"diagnostics": []}}
    answer = shared.request(2, method, params)
    assert answer["error"]["code"] in (-32602, -32603)
    _serves(shared, known, 3)


def test_out_of_range_positions_are_answered(client: RawClient, tmp_path: Path) -> None:
    uri = _open(client, tmp_path / "train.py", LOOP)
    assert _hover(client, 2, uri, 10**6, 0)["result"] is None
    assert _hover(client, 3, uri, 8, 10**6)["result"] is None
    assert _error(_hover(client, 4, uri, -1, 0)) == (4, -32602)
    far = {"start": {"line": 900, "character": 0}, "end": {"line": 1000, "character": 5}}
    stale = {"range": far, "message": "stale", "code": "GL101", "source": "gradlint"}
    answer = client.request(5, "textDocument/codeAction", {"textDocument": {"uri": uri}, "range": far,
                                                            "context": {"diagnostics": [stale]}})
    assert "error" not in answer
    _serves(client, uri, 6)


def test_out_of_range_and_out_of_order_edits_keep_the_document_usable(client: RawClient, tmp_path: Path) -> None:
    uri = _open(client, tmp_path / "train.py", LOOP, version=5)
    assert client.published(uri)["diagnostics"] == []
    far = {"start": {"line": 500, "character": 0}, "end": {"line": 600, "character": 3}}
    client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 6},
                                             "contentChanges": [{"range": far, "text": "# appended\n"}]})
    client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 2},
                                             "contentChanges": [{"text": LOOP.replace("  # noqa: GL101", "")}]})
    published = client.wait(lambda m: m.get("method") == "textDocument/publishDiagnostics"
                            and [d["code"] for d in m["params"]["diagnostics"]] == ["GL101"])
    assert published["params"]["diagnostics"][0]["range"]["start"] == {"line": 8, "character": 12}
    client.notify("textDocument/didChange", {"textDocument": {"uri": "file:///never/opened.py", "version": 1},
                                             "contentChanges": [{"text": "x = 1\n"}]})
    client.notify("textDocument/didClose", {"textDocument": {"uri": "file:///never/opened.py"}})
    client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": 9},
                                             "contentChanges": [{"text": LOOP}]})
    _serves(client, uri, 2)


def test_a_huge_content_length_costs_one_message_not_the_session(client: RawClient, tmp_path: Path) -> None:
    """A declared length of 99,999,999,999 bytes is neither allocated nor waited for: the
    message gets an error with id null, the body's bytes are skipped, the session goes on."""
    uri = _open(client, tmp_path / "train.py", LOOP)
    client.raw(b'Content-Length: 99999999999\r\n\r\n{"jsonrpc": "2.0", "id": 5, "method": "shutdown"}\r\n')
    assert _error(client.wait(lambda m: "error" in m and m.get("id") is None)) == (None, -32700)
    _serves(client, uri, 2)
    assert client.process.poll() is None


def test_exit_without_shutdown_ends_with_status_1(tmp_path: Path) -> None:
    peer = next(_session(tmp_path))
    peer.notify("exit", None)
    assert peer.process.wait(timeout=WAIT) == 1


def test_requests_after_shutdown_are_invalid_and_exit_then_ends_with_status_0(tmp_path: Path) -> None:
    peer = next(_session(tmp_path))
    uri = _open(peer, tmp_path / "train.py", LOOP)
    assert peer.request(2, "shutdown", None)["result"] is None
    answer = _hover(peer, 3, uri, 0, 0)
    assert _error(answer) == (3, -32600)
    peer.notify("exit", None)
    assert peer.process.wait(timeout=WAIT) == 0


@pytest.mark.parametrize("uri", ["file:///dev/zero", "file:///dev/stdin"])
def test_a_device_is_never_opened(shared: RawClient, shared_root: Path, uri: str) -> None:
    for msg_id, method in ((11, "textDocument/hover"), (12, "textDocument/codeAction"), (13, "textDocument/diagnostic")):
        params: dict[str, Any] = {"textDocument": {"uri": uri}}
        if method == "textDocument/hover":
            params["position"] = {"line": 0, "character": 0}
        if method == "textDocument/codeAction":
            params["range"] = {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}}
            params["context"] = {"diagnostics": []}
        answer = shared.request(msg_id, method, params)
        assert "error" in answer or answer["result"] in (None, [])
    _serves(shared, _open(shared, _document(shared_root), LOOP), 14)


def _change(client: RawClient, uri: str, version: int, changes: list[dict]) -> None:
    client.notify("textDocument/didChange", {"textDocument": {"uri": uri, "version": version},
                                             "contentChanges": changes})


def _range(line: int, start: int, end_line: int, end: int) -> dict:
    return {"start": {"line": line, "character": start}, "end": {"line": end_line, "character": end}}


def _published_codes(client: RawClient, uri: str, codes: list[str]) -> list[dict]:
    """The first diagnostics published for ``uri`` with exactly ``codes``."""
    return client.wait(lambda m: m.get("method") == "textDocument/publishDiagnostics"
                       and m["params"]["uri"] == uri
                       and [d["code"] for d in m["params"]["diagnostics"]] == codes)["params"]["diagnostics"]


@pytest.mark.parametrize("separator", ["\x0c", "\x0b", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"],
                         ids=["form-feed", "vt", "fs", "gs", "rs", "nel", "line-sep", "para-sep"])
def test_a_line_separator_python_ignores_shifts_no_edit_and_no_diagnostic(shared: RawClient, shared_root: Path,
                                                                        separator: str) -> None:
    """``str.splitlines`` ends a line at these characters, LSP clients and Python do not: an
    incremental edit below one (removing the noqa of line 8) lands where the client meant."""
    text = LOOP.replace("import torch\n", f"import torch  # a{separator}b\n")
    uri = _open(shared, _document(shared_root), text)
    line = text.split("\n")[8]
    at = line.index("  # noqa")
    _change(shared, uri, 2, [{"range": _range(8, at, 8, len(line)), "text": ""}])
    (diagnostic,) = _published_codes(shared, uri, ["GL101"])
    assert diagnostic["range"] == _range(8, 12, 8, at)
    assert _hover(shared, 2, uri, 0, 0)["result"] is None  # the document is still served


def test_lone_carriage_returns_are_line_breaks_for_edits_and_diagnostics(client: RawClient, tmp_path: Path) -> None:
    text = LOOP.replace("\n", "\r")
    uri = _open(client, tmp_path / "train.py", text)
    line = LOOP.split("\n")[8]
    at = line.index("  # noqa")
    _change(client, uri, 2, [{"range": _range(8, at, 8, len(line)), "text": ""}])
    (diagnostic,) = _published_codes(client, uri, ["GL101"])
    assert diagnostic["range"] == _range(8, 12, 8, at)


def _code_action(client: RawClient, msg_id: int, uri: str, diagnostic: dict) -> list[dict]:
    answer = client.request(msg_id, "textDocument/codeAction", {
        "textDocument": {"uri": uri}, "range": diagnostic["range"],
        "context": {"diagnostics": [diagnostic], "only": ["quickfix"]}})
    return answer["result"] or []


def test_disable_for_this_line_is_never_offered_for_an_older_version(client: RawClient, tmp_path: Path) -> None:
    """After a docstring is inserted above it, the diagnostic's old line is inside the
    docstring: a noqa there would change the string. Only the current version's
    diagnostic gets the action, on its own line."""
    uri = _open(client, tmp_path / "train.py", LOOP.replace("  # noqa: GL101", ""))
    (old,) = _published_codes(client, uri, ["GL101"])
    docstring = '    """Train.\n\n    Notes:\n    ' + "x" * 10 + '\n\n    end\n    """\n'
    _change(client, uri, 2, [{"range": _range(4, 0, 4, 0), "text": docstring}])
    (current,) = _published_codes(client, uri, ["GL101"])
    assert current["range"]["start"]["line"] == old["range"]["start"]["line"] + docstring.count("\n")
    assert _code_action(client, 2, uri, old) == []
    titles = {a["title"]: a for a in _code_action(client, 3, uri, current)}
    action = titles["Disable GL101 for this line"]
    (edit,) = action["edit"]["changes"][uri]
    assert edit["range"]["start"]["line"] == current["range"]["start"]["line"]
    assert edit["newText"] == "  # noqa: GL101"


def test_a_document_over_the_size_limit_is_one_gl000(client: RawClient, tmp_path: Path) -> None:
    (tmp_path / "gradlint.toml").write_text("max-file-size = 200\n")
    uri = _open(client, tmp_path / "train.py", LOOP.replace("  # noqa: GL101", ""))
    size = len(LOOP.replace("  # noqa: GL101", "").encode())
    (notice,) = _published_codes(client, uri, ["GL000"])
    assert notice["message"] == (f"not analysed: {size} bytes is over the 200-byte limit "
                                 "(max-file-size = 0 in the configuration checks it)")
    assert notice["range"] == _range(0, 0, 0, 0)
    (tmp_path / "gradlint.toml").write_text("max-file-size = 0\n")
    client.notify("textDocument/didSave", {"textDocument": {"uri": uri}})
    assert _published_codes(client, uri, ["GL101"])


@pytest.mark.parametrize(("name", "data", "error"), [
    ("gradlint.toml", b"select = [\"GL1\"]\n# caf\xe9\n", "the file is not UTF-8"),
    ("pyproject.toml", b"[tool.gradlint]\nx = " + b"[" * 1200 + b"]" * 1200 + b"\n", "nested too deeply to read"),
], ids=["not-utf8", "nested-1200-deep"])
def test_an_unreadable_configuration_is_shown_once_and_the_defaults_apply(client: RawClient, tmp_path: Path,
                                                                         name: str, data: bytes, error: str) -> None:
    (tmp_path / name).write_bytes(data)
    uri = _open(client, tmp_path / "train.py", LOOP.replace("  # noqa: GL101", ""))
    _published_codes(client, uri, ["GL101"])
    for version in (2, 3):
        _change(client, uri, version, [{"text": LOOP.replace("  # noqa: GL101", "") + f"# edit {version}\n"}])
        _published_codes(client, uri, ["GL101"])
    shown = [m["params"]["message"] for m in client.unclaimed if m.get("method") == "window/showMessage"]
    assert shown == [f"gradlint: {name}: invalid TOML: {error} (using the default rules)"]


def test_a_long_session_stays_flat_in_memory(tmp_path: Path) -> None:
    """300 edit-and-lint cycles of one document (a pull client: each lint answers a
    request): the server's resident memory after them is within 10 MB of what it was after
    the first 50 (nothing kept per version)."""
    peer = RawClient(tmp_path)
    try:
        peer.request(1, "initialize", {"processId": None, "rootUri": tmp_path.as_uri(),
                                       "capabilities": {"textDocument": {"diagnostic": {}}}})
        peer.notify("initialized", {})
        text = LOOP.replace("  # noqa: GL101", "")
        uri = _open(peer, tmp_path / "train.py", text)

        def cycles(first: int, last: int) -> None:
            for version in range(first, last):
                _change(peer, uri, version, [{"range": _range(0, 0, 0, 0), "text": f"# version {version}\n"}])
                report = peer.request(version, "textDocument/diagnostic", {"textDocument": {"uri": uri}})
                assert [d["code"] for d in report["result"]["items"]] == ["GL101"]
                assert report["result"]["items"][0]["range"]["start"]["line"] == 8 + version - 1
                peer.unclaimed.clear()

        cycles(2, 52)
        settled = _rss(peer.process.pid)
        cycles(52, 302)
        grown = _rss(peer.process.pid) - settled
        assert grown < 10 * 2**20, f"grew by {grown / 2**20:.1f} MB"
    finally:
        peer.process.kill()
        peer.process.wait(timeout=WAIT)
        peer.process.stdin.close()
        peer.process.stdout.close()


def _rss(pid: int) -> int:
    """Resident set size of process ``pid`` in bytes (Linux ``/proc``)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def test_a_runaway_lint_is_stopped_by_its_cpu_budget_and_becomes_one_gl000(monkeypatch: pytest.MonkeyPatch,
                                                                            tmp_path: Path) -> None:
    """On the server's lint thread (no timer signal there) the budget still stops the work."""
    from concurrent.futures import ThreadPoolExecutor

    from gradlint.lsp import server as module

    def spin(*args: object, **kwargs: object) -> list:
        while True:
            try:
                sum(range(1000))
            except Exception:  # code that swallows errors does not keep the analysis alive
                pass

    monkeypatch.setattr(module, "lint_source", spin)
    served = module.build_server()
    served.timeout = 0.3
    with ThreadPoolExecutor(1) as pool:
        outcome = pool.submit(served._lint_job, (tmp_path / "train.py").as_uri(), 4, LOOP).result(timeout=WAIT)
        assert pool.submit(sum, range(10)).result(timeout=WAIT) == 45  # the thread is left usable
    assert [(d.code, d.line, d.message) for d in outcome.diagnostics] == [
        ("GL000", 1, "not analysed: the analysis took more than 0.3 CPU seconds (the server gave up on this version)")]


def test_the_thread_budget_leaves_a_block_that_ends_in_time_alone() -> None:
    from gradlint.lsp.guard import thread_budget

    with thread_budget(5):
        total = sum(range(10_000))
    assert total == 49_995_000
    with pytest.raises(ValueError, match="own error"), thread_budget(5):
        raise ValueError("own error")


def test_hints_and_hovers_read_a_document_within_the_size_limit_and_the_cpu_budget(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The loop view (inlay hints, hover) reads a document under the same guards as a lint:
    nothing over the size limit, and a runaway reading is stopped by the budget."""
    from concurrent.futures import ThreadPoolExecutor

    from gradlint.lsp import loop_view
    from gradlint.lsp import server as module

    served = module.build_server()
    path = str(tmp_path / "train.py")
    assert [v.line for v in loop_view.read_loops(LOOP, path, served)]  # the loop is read
    (tmp_path / "pyproject.toml").write_text("[tool.gradlint]\nmax-file-size = 10\n")
    served.settings_cache = type(served.settings_cache)()
    assert loop_view.read_loops(LOOP, path, served) == []  # over the limit: not read
    (tmp_path / "pyproject.toml").unlink()
    served.settings_cache = type(served.settings_cache)()

    def spin(*args: object, **kwargs: object) -> list:
        while True:
            sum(range(1000))

    monkeypatch.setattr(loop_view, "explain_source", spin)
    served.timeout = 0.3
    with ThreadPoolExecutor(1) as pool:
        assert pool.submit(loop_view.read_loops, LOOP, path, served).result(timeout=WAIT) == []
