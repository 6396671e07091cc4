"""Fix safety beyond tests/test_fixer.py: with every fix applied (unsafe ones too), every
fixture keeps its statements and comments (tests/fixsafety.py); a write that fails or is
killed at any point leaves the old file or the new one, never a truncated one."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import ROOT
from fixsafety import check_fix_safety, violations
from fixture_results import Fixture, fixed, fixtures

from gradlint import writer
from gradlint.diagnostics import Applicability, Diagnostic, Fix, Severity, Span
from gradlint.discovery import discover
from gradlint.fixer import FixResult
from gradlint.writer import write_atomic
from gradlint.settings import default_settings


@pytest.mark.parametrize("fixture", fixtures(), ids=lambda f: f.id)
def test_every_fix_keeps_the_statements_and_comments_it_does_not_move(fixture: Fixture) -> None:
    check = check_fix_safety(fixture.text, fixture.name, default_settings(), fix=fixed)
    assert check.problems == []


def _fixed(text: str, message: str = "Move the clip") -> FixResult:
    fix = Fix(Applicability.SAFE, message, ())
    diagnostic = Diagnostic("x.py", Span(1, 1, 1, 1), "GL101", "clip-per-micro-batch", Severity.ERROR, "m", fix)
    return FixResult(text, fixed=[diagnostic])


BEFORE = "for x in data:\n    loss = model(x)  # forward\n    loss.backward()\n    log(loss)  # keep me\n"


@pytest.mark.parametrize(("after", "message", "problem"), [
    (BEFORE.replace("    log(loss)  # keep me\n", ""), "Move the clip", "statements lost: ['log(loss)']"),
    (BEFORE.replace("  # keep me", ""), "Move the clip", "comment lost: line 4: # keep me"),
    (BEFORE.replace("loss.backward()", "loss.backward("), "Move the clip", "the fixed text does not parse"),
    (BEFORE.replace("    loss = model(x)  # forward\n", ""), "Move the clip", "statements lost: ['loss = model(x)']"),
])
def test_the_safety_check_sees_what_a_broken_fix_would_do(after: str, message: str, problem: str) -> None:
    assert violations(BEFORE, _fixed(after, message))[0].startswith(problem)


TWICE = "for x in data:\n    loss.backward()\n    optimizer.zero_grad()\n    if ready:\n        optimizer.step()\n" \
        "        optimizer.zero_grad()\n"
GUARDED = "for x in data:\n    loss.backward()\n    if norm:\n        prepare()\n        model.clip_grad_norm_(norm)\n" \
          "    if ready:\n        scaler.step(opt)\n"
OPTIONAL = "for x in data:\n    loss.backward()\n    if ready:\n        model.clip_grad_norm_(1.0)\n" \
           "        if scaler is not None:\n            scaler.step(opt)\n            scaler.update()\n"


@pytest.mark.parametrize(("before", "after", "problem"), [
    (TWICE, TWICE.replace("    optimizer.zero_grad()\n    if ready:\n        optimizer.step()\n",
                          "    if ready:\n        optimizer.step()\n        optimizer.zero_grad()\n", 1),
     "`optimizer.zero_grad` moved where the same call already runs"),
    (GUARDED, GUARDED.replace("        model.clip_grad_norm_(norm)\n", "", 1)
     .replace("        scaler.step(opt)\n", "        model.clip_grad_norm_(norm)\n        scaler.step(opt)\n", 1),
     "`model.clip_grad_norm_` removed from for x in data > if norm then"),
    (TWICE.replace("    optimizer.zero_grad()\n", "    if bad:\n        optimizer.zero_grad()\n", 1),
     TWICE.replace("    optimizer.zero_grad()\n", "", 1),
     "`optimizer.zero_grad` removed from for x in data > if bad then (ran under its own condition"),
    (OPTIONAL, OPTIONAL.replace("        model.clip", "        scaler.unscale_(opt)\n        model.clip", 1),
     "`scaler.unscale_` inserted outside `if scaler is not None:`"),
    ("for x in data:\n    loss = model(x) / n\n    loss.backward()\n",
     "for x in data:\n    loss = model(x) / n\n    (loss / n).backward()\n",
     "`(loss / n).backward()` divides `loss` by `n` again"),
], ids=["doubled", "guard-dropped", "guarded-removal", "unguarded-unscale", "divided-twice"])
def test_the_safety_check_sees_a_fix_that_changes_what_the_training_calls_do(
        before: str, after: str, problem: str) -> None:
    assert [p for p in violations(before, _fixed(after)) if p.startswith(problem)], violations(before, _fixed(after))


@pytest.mark.parametrize(("before", "after", "message"), [
    (BEFORE, BEFORE.replace("loss.backward()", "(loss / accum).backward()"), "Divide the loss by `accum`"),
    (TWICE, TWICE.replace("    optimizer.zero_grad()\n    if", "    if", 1), "Remove `optimizer.zero_grad()`: ..."),
    (BEFORE, BEFORE.replace("    log(loss)  # keep me\n", "    if ready:\n        log(loss)  # keep me\n"), "Wrap"),
    ("x = 1\nif clipping:\n    clip()\n", "x = 1\n", "Remove `clip()`: ..."),
    (GUARDED, GUARDED.replace("    if norm:\n        prepare()\n        model.clip_grad_norm_(norm)\n", "", 1)
     .replace("        scaler.step(opt)\n", "        if norm:\n            prepare()\n            model.clip_grad_norm_(norm)\n"
              "        scaler.step(opt)\n", 1), "Move `model.clip_grad_norm_()`: ..."),
], ids=["rewrite", "removal", "wrap", "removal-with-its-if", "move-to-gate"])
def test_the_safety_check_accepts_rewrites_removals_and_wrapping(before: str, after: str, message: str) -> None:
    assert violations(before, _fixed(after, message)) == []


# -- interrupted writes ------------------------------------------------------------------------

OLD = b"old = 1\n" * 1000
NEW = b"new = 2\n" * 250_000  # 2 MB: several write calls


@pytest.mark.parametrize("failing", ["mkstemp", "write", "fsync", "chmod", "replace"])
def test_a_write_failing_at_any_step_leaves_the_old_file_and_no_temporary(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, failing: str) -> None:
    path = tmp_path / "train.py"
    path.write_bytes(OLD)

    def fail(*args, **kwargs):
        raise OSError(28, "No space left on device")

    if failing == "mkstemp":
        monkeypatch.setattr(writer.tempfile, "mkstemp", fail)
    elif failing == "write":
        real_fdopen = os.fdopen

        def half_then_fail(fd, *args, **kwargs):
            handle = real_fdopen(fd, *args, **kwargs)
            real_write = handle.write

            def write(data):
                real_write(data[: len(data) // 2])
                handle.flush()
                fail()

            handle.write = write
            return handle

        monkeypatch.setattr(writer.os, "fdopen", half_then_fail)
    else:
        monkeypatch.setattr(writer.os, failing, fail)
    with pytest.raises(OSError, match="No space left on device"):
        write_atomic(path, NEW, expected=OLD)
    assert path.read_bytes() == OLD
    assert [p.name for p in tmp_path.iterdir()] == ["train.py"]


_CHILD = textwrap.dedent("""
    import os, sys, time
    from pathlib import Path
    import gradlint.writer as writer

    path, point = Path(sys.argv[1]), sys.argv[2]
    old, new = path.read_bytes(), b"new = 2\\n" * 250_000

    def pause():
        print("ready", flush=True)
        time.sleep(600)

    def before(name, module):
        real = getattr(module, name)
        def wrapper(*args, **kwargs):
            pause()
            return real(*args, **kwargs)
        setattr(module, name, wrapper)

    if point == "mid-write":
        real_fdopen = os.fdopen
        def fdopen(fd, *args, **kwargs):
            handle = real_fdopen(fd, *args, **kwargs)
            real_write = handle.write
            def write(data):
                real_write(data[: len(data) // 2])
                handle.flush()
                pause()
            handle.write = write
            return handle
        writer.os.fdopen = fdopen
    elif point == "before-write":
        before("fdopen", writer.os)
    elif point == "before-rename":
        before("replace", writer.os)
    elif point == "after-rename":
        writer._sync_folder = lambda folder: pause()
    writer.write_atomic(path, new, expected=old)
""")


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
@pytest.mark.parametrize(("point", "expected"), [
    ("before-write", OLD), ("mid-write", OLD), ("before-rename", OLD), ("after-rename", NEW)])
def test_a_write_killed_at_any_point_leaves_the_old_or_the_new_file(tmp_path: Path, point: str,
                                                                     expected: bytes) -> None:
    """The writing process is killed (SIGKILL: no clean-up runs) at a point it reports;
    a temporary file may stay behind, but it is never taken for a source file."""
    path = tmp_path / "train.py"
    path.write_bytes(OLD)
    child = subprocess.Popen([sys.executable, "-c", _CHILD, str(path), point], stdout=subprocess.PIPE,
                             text=True, cwd=ROOT)
    try:
        assert child.stdout.readline() == "ready\n"
    finally:
        child.kill()
        child.wait(timeout=60)
        child.stdout.close()
    assert path.read_bytes() == expected
    assert discover([tmp_path]) == [path]
