"""Hostile inputs through the real command line and ``lint_bytes``: odd encodings and line
endings, binary and huge files, deep nesting, files that are not regular files, vanish or
cannot be read, and the per-file analysis time budget. Each problem is reported for its
file, the run goes on, and the exit status says so; never a traceback, never a hang."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import warnings
from pathlib import Path

import pytest
from samples import BAD, gradlint

from gradlint import cli as cli_module
from gradlint import engine as engine_module
from gradlint.budget import AnalysisTimeout, time_budget
from gradlint.cache import SETTLED_NS
from gradlint.engine import lint_bytes, lint_source
from gradlint.settings import default_settings

ROOT = Path(__file__).resolve().parent.parent
BAD_FOUND = [(12, 13, "GL101"), (13, 13, "GL104")]
LATIN1 = "# -*- coding: latin-1 -*-\n# caf\xe9 au lait\n"


def _found(data: bytes) -> list[tuple[int, int, str]]:
    return [(d.line, d.column, d.code) for d in lint_bytes(data, "x.py", default_settings())]


def _messages(data: bytes) -> list[tuple[int, int, str, str]]:
    return [(d.line, d.column, d.code, d.message) for d in lint_bytes(data, "x.py", default_settings())]


def _mixed_line_endings(text: str) -> str:
    lines = text.split("\n")
    return "\r\n".join(lines[:6]) + "\r\n" + "\n".join(lines[6:])


@pytest.mark.parametrize(("data", "expected"), [
    (b"", []),
    (b"# loss.backward()\n# optimizer.step()\n", []),
    (b"\n\n\n", []),
    (b"\xef\xbb\xbf" + BAD.encode(), BAD_FOUND),
    (BAD.replace("\n", "\r\n").encode(), BAD_FOUND),
    (_mixed_line_endings(BAD).encode(), BAD_FOUND),
    (BAD.replace("    ", "\t").encode(), [(12, 4, "GL101"), (13, 4, "GL104")]),
    ((LATIN1 + BAD).encode("latin-1"), [(14, 13, "GL101"), (15, 13, "GL104")]),
    (b"\xef\xbb\xbf" + BAD.replace("\n", "\r\n").encode(), BAD_FOUND),
    (BAD.rstrip("\n").encode(), BAD_FOUND),
], ids=["empty", "only-comments", "only-blank-lines", "bom", "crlf", "mixed-endings", "tabs", "latin-1-cookie",
        "bom-and-crlf", "no-final-newline"])
def test_encodings_and_layouts_are_read_like_python(data: bytes, expected: list) -> None:
    assert _found(data) == expected


@pytest.mark.parametrize(("data", "expected"), [
    (b"# \xff\xfe\n" + BAD.encode(), (1, 3, "GL000", "source is not valid utf-8 text and declares no other encoding")),
    (BAD.encode() + b"\x00\x01\x02", (16, 1, "GL000", "file contains NUL bytes (binary, not Python source)")),
    (bytes(range(256)) * 4 + b"loss.backward()", (1, 1, "GL000", "file contains NUL bytes (binary, not Python source)")),
    (b"# coding: klingon\n" + BAD.encode(), (1, 1, "GL000", "cannot decode source: unknown encoding: klingon")),
    ((LATIN1 + BAD).encode("latin-1").replace(b"latin-1", b"utf-8"),
     (2, 6, "GL000", "source is not valid utf-8 text")),
], ids=["invalid-utf8", "nul-bytes", "binary", "unknown-cookie", "cookie-says-utf8-but-latin1"])
def test_undecodable_bytes_are_one_gl000(data: bytes, expected: tuple) -> None:
    assert _messages(data) == [expected]


TRAINING = "\nloss.backward()\noptimizer.step()\n"


@pytest.mark.parametrize(("text", "expected"), [
    ("x = " + "(" * 1000 + "1" + ")" * 1000 + TRAINING, (1, 205, "syntax error: too many nested parentheses")),
    ("x = " + "[" * 1000 + "]" * 1000 + TRAINING, (1, 205, "syntax error: too many nested parentheses")),
    ("".join(" " * i + "if x:\n" for i in range(1000)) + " " * 1000 + "pass" + TRAINING,
     (101, 1, "syntax error: too many levels of indentation")),
    ("x = 1" + " + 1" * 100_000 + TRAINING, (1, 1, "file is too deeply nested to analyse")),
    ("x = " + "-" * 100_000 + "1" + TRAINING, (1, 1, "file is too deeply nested to analyse")),
    ("y = x" + ".a" * 20_000 + TRAINING, (1, 1, "file is too deeply nested to analyse")),
], ids=["parentheses", "brackets", "blocks", "long-sum", "unary-chain", "attribute-chain"])
def test_nesting_python_rejects_is_one_gl000(text: str, expected: tuple) -> None:
    """Python refuses these too (its parser, or RecursionError/MemoryError building the tree)."""
    line, column, message = expected
    assert _messages(text.encode()) == [(line, column, "GL000", message)]


def _loop(statement: str) -> str:
    return (f"def train(model, loader, optimizer, accum):\n    for i, x in enumerate(loader):\n"
            f"        loss = model(x)\n        {statement}\n        loss.backward()\n"
            f"        if (i + 1) % accum == 0:\n            optimizer.step()\n            optimizer.zero_grad()\n")


@pytest.mark.parametrize("statement", [
    "y = " + "f(" * 190 + "x" + ")" * 190,
    "y = " + "lambda: " * 150 + "x",
    "y = " + " ".join('"s"' for _ in range(20_000)),
    "y = (" + ", ".join(f"a{k}" for k in range(5_000)) + ")",
], ids=["nested-calls", "nested-lambdas", "string-concatenation", "long-tuple"])
def test_deep_code_python_accepts_is_analysed_or_skipped_without_error(statement: str) -> None:
    found = lint_source(_loop(statement), "x.py", default_settings())
    assert {d.code for d in found} <= {"GL201"}


def test_a_boolean_chain_too_deep_for_libcst_does_not_kill_the_process(tmp_path: Path) -> None:
    """libcst's native parser overflows the C stack on ~7,000 chained ``and`` (a segfault,
    not an exception): such a unit is not parsed. In a subprocess, so a regression fails
    this test instead of killing the test run."""
    path = tmp_path / "chain.py"
    path.write_text(_loop("y = " + " and ".join(f"a{k}" for k in range(12_000))))
    done = subprocess.run([sys.executable, "-m", "gradlint", "check", str(path), "--no-cache", "--isolated",
                           "--format", "json"], capture_output=True, text=True, timeout=300, check=False)
    assert (done.returncode, json.loads(done.stdout), done.stderr) == (0, [], "")


def test_no_warning_escapes_from_the_users_code() -> None:
    text = _loop('pattern = "\\d+"') + 'other = "\\w"\n'
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert [d.code for d in lint_source(text, "x.py", default_settings())] == ["GL201"]
    assert [str(w.message) for w in caught] == []


def _notebook(cells: object, **document: object) -> bytes:
    return json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, **document, "cells": cells}).encode()


CODE_CELL = {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None}


@pytest.mark.parametrize(("data", "message"), [
    (b"{not json, loss.backward()", ("not a notebook: invalid JSON: Expecting property name enclosed in double quotes: "
                             "line 1 column 2 (char 1)")),
    (b"[" * 100_000 + b"loss.backward()" + b"]" * 100_000,
     ("not a notebook: invalid JSON: maximum recursion depth exceeded while decoding a JSON array from a unicode "
     "string")),
    (_notebook("loss.backward()"), "not a notebook: no 'cells' list"),
    (_notebook([{**CODE_CELL, "source": ["loss.backward()\n", 5, None]}]),
     "not a notebook: the source of cell 1 is not text"),
    (_notebook([{**CODE_CELL, "source": 5}, {**CODE_CELL, "source": "loss.backward()"}]),
     "not a notebook: the source of cell 1 is not text"),
], ids=["not-json", "deep-json", "cells-not-a-list", "source-list-with-numbers", "source-number"])
@pytest.mark.parametrize("fix", [False, True])
def test_a_broken_notebook_is_one_gl000(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, data: bytes, message: str,
                                        fix: bool) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "broken.ipynb").write_bytes(data)
    status, lines, stderr = _lines("broken.ipynb", *(["--fix"] if fix else []))
    assert (status, lines, stderr) == (1, [f"broken.ipynb:1:1: GL000 {message}"], "")
    assert (tmp_path / "broken.ipynb").read_bytes() == data


@pytest.mark.parametrize("metadata", [[1], {"language_info": "python", "kernelspec": 3}])
def test_malformed_notebook_metadata_says_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                  metadata: object) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "nb.ipynb").write_bytes(_notebook([{**CODE_CELL, "source": BAD}], metadata=metadata))
    status, lines, _ = _lines("nb.ipynb")
    assert (status, [line.split(" ")[:2] for line in lines]) == (1, [["nb.ipynb:cell", "1:12:13:"],
                                                                    ["nb.ipynb:cell", "1:13:13:"]])


# -- files that are not files -------------------------------------------------------------


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "bad.py").write_text(BAD)
    return tmp_path


def _lines(*args: str) -> tuple[int, list[str], str]:
    """Exit status, the findings as "path:line:col: CODE message" (no summary), stderr."""
    result = gradlint("check", "--no-cache", "--isolated", "--format", "concise", "-j", "1", *args)
    return result.exit_code, [line for line in result.stdout.splitlines() if ": GL" in line], result.stderr


def test_a_symlink_loop_is_an_io_error_when_named_and_not_followed_in_a_walk(project: Path) -> None:
    os.symlink("loop_b.py", project / "loop_a.py")
    os.symlink("loop_a.py", project / "loop_b.py")
    status, lines, _ = _lines("loop_a.py", "bad.py")
    assert status == 1
    assert lines[0] == "bad.py:12:13: GL101 [*] " + lines[0].split("[*] ", 1)[1]
    assert "loop_a.py:1:1: GL000 I/O error: cannot read file: Too many levels of symbolic links" in lines
    status, lines, stderr = _lines(".")
    assert (status, [line.split(" ")[0] for line in lines], stderr) == (1, ["bad.py:12:13:", "bad.py:13:13:"], "")


def test_a_folder_named_like_a_python_file_is_walked(project: Path) -> None:
    (project / "x.py").mkdir()
    (project / "x.py" / "inner.py").write_text(BAD)
    status, lines, _ = _lines("x.py")
    assert (status, [line.split(" ")[0] for line in lines]) == (1, ["x.py/inner.py:12:13:", "x.py/inner.py:13:13:"])


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes on this platform")
def test_a_named_pipe_is_reported_not_read(tmp_path: Path) -> None:
    """Reading a FIFO would block for ever (and a device could never end): in a subprocess
    with a timeout, so a regression fails instead of hanging the suite."""
    os.mkfifo(tmp_path / "pipe.py")
    (tmp_path / "bad.py").write_text(BAD)
    for args in (["pipe.py", "bad.py"], ["pipe.py", "bad.py", "--fix"], ["pipe.py", "--format", "full"]):
        done = subprocess.run([sys.executable, "-m", "gradlint", "check", "--no-cache", "--isolated",
                               "--format", "concise", *args], cwd=tmp_path, capture_output=True, text=True,
                              timeout=120, check=False)
        assert done.returncode == 1, done.stderr
        assert "pipe.py:1:1: GL000 I/O error: cannot read file: not a regular file" in done.stdout
        assert "Traceback" not in done.stderr


def _check_in_subprocess(folder: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gradlint", "check", "--format", "concise", *args], cwd=folder,
                          capture_output=True, text=True, timeout=120, check=False)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes on this platform")
@pytest.mark.parametrize("place", ["gitignore", "cache-index", "cache-entries"])
def test_a_named_pipe_where_gradlint_reads_its_own_files_is_never_opened(tmp_path: Path, place: str) -> None:
    """A FIFO as the ``.gitignore`` discovery reads or as a file of the cache is not a
    regular file: it counts as absent (or a cache miss) instead of blocking the run."""
    (tmp_path / "bad.py").write_text(BAD)
    (tmp_path / "gradlint.toml").write_text("")
    time.sleep(SETTLED_NS / 1e9 + 0.1)  # settled: the cache's file index keeps the file
    first = _check_in_subprocess(tmp_path, "--cache-dir", "cache", ".")
    assert first.returncode == 1, first.stderr
    if place == "gitignore":
        os.mkfifo(tmp_path / ".gitignore")
    else:
        pattern = "files.json" if place == "cache-index" else "??/*.json"
        found = sorted((tmp_path / "cache").rglob(pattern))
        assert found
        for path in found:
            path.unlink()
            os.mkfifo(path)
    again = _check_in_subprocess(tmp_path, "--cache-dir", "cache", ".")
    assert (again.returncode, again.stdout, again.stderr) == (1, first.stdout, "")


def test_a_file_that_vanishes_mid_run_is_an_io_error(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (project / "gone.py").write_text(BAD)
    found = cli_module.discover

    def discover_then_delete(*args, **kwargs):
        files = found(*args, **kwargs)
        (project / "gone.py").unlink()
        return files

    monkeypatch.setattr(cli_module, "discover", discover_then_delete)
    status, lines, _ = _lines(".")
    assert status == 1
    assert [line.split(" ")[0] for line in lines] == ["bad.py:12:13:", "bad.py:13:13:", "gone.py:1:1:"]
    assert lines[-1] == "gone.py:1:1: GL000 I/O error: cannot read file: No such file or directory"


def test_an_unreadable_file_is_an_io_error(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """chmod 000 where it works; as root (which reads anyway) the stat is refused instead,
    as for a file in a folder that may not be entered."""
    locked = project / "locked.py"
    locked.write_text(BAD)
    if os.geteuid() != 0:
        locked.chmod(0)
    else:
        real_stat = os.stat

        def refuse(path, *args, **kwargs):
            if os.fspath(path).endswith("locked.py"):
                raise PermissionError(13, "Permission denied", os.fspath(path))
            return real_stat(path, *args, **kwargs)

        monkeypatch.setattr(os, "stat", refuse)
    try:
        status, lines, _ = _lines("locked.py", "bad.py")
    finally:
        locked.chmod(0o644)
    assert status == 1
    assert lines[-1] == "locked.py:1:1: GL000 I/O error: cannot read file: Permission denied"
    assert len(lines) == 3


def test_a_10_mb_file_is_skipped_with_a_notice_or_checked_without_limit(project: Path) -> None:
    padding = "# " + "x" * 97 + "\n"
    (project / "huge.py").write_text(BAD + padding * 100_000)
    size = (project / "huge.py").stat().st_size
    assert size > 10_000_000
    status, lines, stderr = _lines("huge.py", "bad.py")
    assert (status, len(lines)) == (1, 3)
    assert lines[-1] == (f"huge.py:1:1: GL000 not analysed: {size} bytes is over the 1048576-byte limit "
                         "(--max-file-size 0 checks it)")
    assert stderr == (f"gradlint: notice: skipped huge.py: {size} bytes is over the 1048576-byte limit "
                      "(--max-file-size 0 checks it)\n")
    status, lines, stderr = _lines("huge.py", "--max-file-size", "0")
    assert (status, [line.split(" ")[0] for line in lines], stderr) == (1, ["huge.py:12:13:", "huge.py:13:13:"], "")


# -- the analysis time budget ---------------------------------------------------------------


def _spin_on_runaway(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the analysis of any file named runaway.py loop for ever."""
    real = engine_module.lint_bytes

    def lint_bytes(data: bytes, path: str, settings, **kwargs):
        while path.endswith("runaway.py"):
            pass
        return real(data, path, settings, **kwargs)

    def lint_source(source: str, path: str, settings, **kwargs):
        while path.endswith("runaway.py"):
            pass
        return real_source(source, path, settings, **kwargs)

    real_source = engine_module.lint_source
    monkeypatch.setattr(engine_module, "lint_bytes", lint_bytes)
    monkeypatch.setattr(engine_module, "lint_source", lint_source)


def test_a_runaway_analysis_becomes_a_notice_and_the_run_goes_on(project: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    (project / "runaway.py").write_text(BAD)
    _spin_on_runaway(monkeypatch)
    status, lines, stderr = _lines(".", "--timeout", "1")
    assert (status, [line.split(" ")[0] for line in lines]) == (1, ["bad.py:12:13:", "bad.py:13:13:", "runaway.py:1:1:"])
    assert lines[-1] == ("runaway.py:1:1: GL000 not analysed: its analysis took more than 1 CPU seconds "
                         "(--timeout 0 removes the limit)")
    assert stderr == ("gradlint: notice: gave up on runaway.py: its analysis took more than 1 CPU seconds "
                      "(--timeout 0 removes the limit)\n")
    assert signal.getsignal(signal.SIGVTALRM) == signal.SIG_DFL
    assert signal.getitimer(signal.ITIMER_VIRTUAL) == (0.0, 0.0)


def test_a_runaway_fix_leaves_the_file_alone(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (project / "runaway.py").write_text(BAD)
    _spin_on_runaway(monkeypatch)
    result = gradlint("check", "--no-cache", "--isolated", "--format", "concise", "--fix", "--timeout", "1", ".")
    assert result.exit_code == 1  # bad.py: GL101 fixed, GL104 (an unsafe fix) remains
    assert [line.split(" ")[0] for line in result.stdout.splitlines() if ": GL" in line] == [
        "bad.py:12:13:", "runaway.py:1:1:"]
    assert result.stderr == "gradlint: warning: runaway.py: not fixed: the analysis took more than 1 CPU seconds\n"
    assert (project / "runaway.py").read_text() == BAD
    assert (project / "bad.py").read_text() != BAD


@pytest.mark.parametrize("fix", [False, True])
def test_a_runaway_analysis_of_stdin_is_a_gl000_and_the_text_comes_back(monkeypatch: pytest.MonkeyPatch,
                                                                        fix: bool) -> None:
    _spin_on_runaway(monkeypatch)
    args = ["check", "--isolated", "--timeout", "1", "--stdin-filename", "runaway.py", *(["--fix"] if fix else []), "-"]
    result = gradlint(*args, input=BAD)
    notice = ("gradlint: notice: gave up on runaway.py: its analysis took more than 1 CPU seconds "
              "(--timeout 0 removes the limit)\n")
    report = result.stderr.removeprefix(notice) if fix else result.stdout
    assert result.exit_code == 1
    assert result.stderr.startswith(notice) and (fix or result.stderr == notice)
    assert report.splitlines()[0] == ("runaway.py:1:1: GL000 not analysed: its analysis took more than 1 CPU seconds "
                                      "(--timeout 0 removes the limit)")
    if fix:
        assert result.stdout == BAD


def test_the_pool_gives_up_on_a_runaway_file_too(tmp_path: Path) -> None:
    """A real runaway (rules compare the events of a loop pairwise: 7,500 events) in the
    worker processes of ``-j 2``; the other files are reported."""
    block = ("        loss.backward()\n        torch.nn.utils.clip_grad_norm_(p, 1.0)\n        scheduler.step()\n"
             "        optimizer.step()\n        optimizer.zero_grad()\n") * 1500
    (tmp_path / "runaway.py").write_text(_loop("pass").replace("        loss.backward()\n", block, 1))
    (tmp_path / "bad.py").write_text(BAD)
    (tmp_path / "other.py").write_text(BAD)
    done = subprocess.run([sys.executable, "-m", "gradlint", "check", "--no-cache", "--isolated", "--format",
                           "concise", "-j", "2", "--timeout", "1", "."], cwd=tmp_path, capture_output=True,
                          text=True, timeout=300, check=False)
    assert done.returncode == 1
    assert [line.split(" ")[0] for line in done.stdout.splitlines() if ": GL" in line] == [
        "bad.py:12:13:", "bad.py:13:13:", "other.py:12:13:", "other.py:13:13:", "runaway.py:1:1:"]
    assert done.stderr == ("gradlint: notice: gave up on runaway.py: its analysis took more than 1 CPU seconds "
                           "(--timeout 0 removes the limit)\n")


def test_time_budget_interrupts_a_busy_block_and_restores_the_signal() -> None:
    before = signal.getsignal(signal.SIGVTALRM)
    with pytest.raises(AnalysisTimeout, match="more than 0.2 CPU seconds"), time_budget(0.2):
        while True:
            pass
    assert signal.getsignal(signal.SIGVTALRM) == before
    for unlimited in (0, 10**20):  # no budget: nothing armed
        with time_budget(unlimited):
            assert signal.getitimer(signal.ITIMER_VIRTUAL) == (0.0, 0.0)


def test_time_budget_wins_over_code_that_replaces_or_swallows_its_exception() -> None:
    """libcst's position tracking raises a KeyError while unwinding from the interruption;
    other code may catch it. Either way the block's end is the timeout."""
    with pytest.raises(AnalysisTimeout) as caught, time_budget(0.2):
        try:
            while True:
                pass
        except AnalysisTimeout:
            raise KeyError("lost track while unwinding") from None
    assert isinstance(caught.value.__cause__, KeyError)
    with pytest.raises(AnalysisTimeout), time_budget(0.2):
        try:
            while True:
                pass
        except BaseException:  # noqa: BLE001, S110 - the swallowing this test is about
            pass
    assert signal.getitimer(signal.ITIMER_VIRTUAL) == (0.0, 0.0)


def test_time_budget_is_not_armed_outside_the_main_thread() -> None:
    seen: list[tuple[float, float]] = []

    def work() -> None:
        with time_budget(5):
            seen.append(signal.getitimer(signal.ITIMER_VIRTUAL))

    thread = threading.Thread(target=work)
    thread.start()
    thread.join()
    assert seen == [(0.0, 0.0)]


_TIMED_OUT = "not analysed: its analysis took more than 1 CPU seconds (--timeout 0 removes the limit)"


@pytest.mark.parametrize("output_format", ["full", "concise", "text", "json", "json-lines", "sarif", "github",
                                           "gitlab", "junit"])
def test_a_runaway_analysis_is_a_gl000_in_every_format_and_exits_1(project: Path, monkeypatch: pytest.MonkeyPatch,
                                                                   output_format: str) -> None:
    """The only file given runs out of time: every format carries the GL000 (no format says
    "all checks passed"), the exit status is 1, and 0 only with ``--exit-zero``."""
    (project / "runaway.py").write_text(BAD)
    _spin_on_runaway(monkeypatch)
    args = ("check", "--no-cache", "--isolated", "-j", "1", "--timeout", "1", "--format", output_format, "runaway.py")
    result = gradlint(*args)
    assert result.exit_code == 1
    assert "GL000" in result.stdout and _TIMED_OUT in result.stdout.replace("\\n", "\n")
    assert "All checks passed" not in result.stdout
    if output_format in ("json", "sarif", "gitlab"):
        json.loads(result.stdout)
    assert gradlint(*args[:1], "--exit-zero", *args[1:]).exit_code == 0
