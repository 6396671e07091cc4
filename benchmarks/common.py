"""Helpers shared by ``realworld.py`` and ``bench.py``: the gradlint command line
and running a child process while measuring its wall time and peak memory."""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
"""The root of the gradlint checkout holding this directory."""

DEFAULT_GRADLINT = "python -m gradlint"


def gradlint_argv(spec: str | None = None) -> list[str]:
    """The gradlint command as an argv; a leading ``python`` means this interpreter."""
    argv = shlex.split(spec or DEFAULT_GRADLINT)
    if argv and argv[0] == "python":
        argv[0] = sys.executable
    return argv


def gradlint_env() -> dict[str, str]:
    """The environment for gradlint: this checkout first on ``PYTHONPATH``, so that
    ``python -m gradlint`` works from a clean clone without installing it."""
    env = dict(os.environ)
    parts = [str(REPO), *filter(None, env.get("PYTHONPATH", "").split(os.pathsep))]
    env["PYTHONPATH"] = os.pathsep.join(parts)
    return env


def help_text(argv: Sequence[str], env: Mapping[str, str] | None = None) -> str:
    """The output of ``argv --help`` (empty if the command fails)."""
    try:
        proc = subprocess.run([*argv, "--help"], capture_output=True, text=True,
                              env=dict(env) if env is not None else None, timeout=120)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return proc.stdout + proc.stderr if proc.returncode == 0 else ""


def supports(help_output: str, flag: str) -> bool:
    """Whether ``flag`` (e.g. ``--exit-zero``) appears as an option in a help text."""
    return re.search(rf"(?<![\w-]){re.escape(flag)}(?![\w-])", help_output) is not None


@dataclass(frozen=True)
class RunResult:
    """What one measured child process did."""

    argv: tuple[str, ...]
    returncode: int
    wall: float
    """Wall-clock seconds from spawn to reaping."""
    maxrss_mib: float
    """Peak resident set size of the largest process of the child's tree (MiB)."""
    stderr: str
    timed_out: bool = False


class _Deadline:
    """Kills a process group when a timeout expires, remembering that it did."""

    def __init__(self, pid: int, timeout: float | None) -> None:
        self.expired = False
        self._pid = pid
        self._timer = threading.Timer(timeout, self._kill) if timeout else None
        if self._timer:
            self._timer.start()

    def _kill(self) -> None:
        self.expired = True
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self._pid, signal.SIGKILL)

    def cancel(self) -> None:
        if self._timer:
            self._timer.cancel()


def run_measured(argv: Sequence[str], *, cwd: Path | None = None,
                 env: Mapping[str, str] | None = None, stdout: Path | None = None,
                 timeout: float | None = None) -> RunResult:
    """Run ``argv`` to completion and measure it with ``os.wait4``.

    Standard output goes to ``stdout`` (a file) or is discarded; standard error is
    returned.  ``ru_maxrss`` of ``wait4`` is the peak RSS of the child or of the
    largest of the descendants it waited for, like ``/usr/bin/time``.  On timeout
    the child's whole process group is killed.
    """
    with contextlib.ExitStack() as stack:
        out = stack.enter_context(open(stdout, "wb")) if stdout else subprocess.DEVNULL
        err = stack.enter_context(tempfile.TemporaryFile())
        start = time.perf_counter()
        proc = subprocess.Popen(list(argv), cwd=cwd, stdin=subprocess.DEVNULL, stdout=out,
                                stderr=err, env=dict(env) if env is not None else None,
                                start_new_session=True)
        deadline = _Deadline(proc.pid, timeout)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        deadline.cancel()
        proc.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        stderr = err.read().decode("utf-8", "replace")
    return RunResult(tuple(argv), proc.returncode, wall, usage.ru_maxrss / 1024,
                     stderr, deadline.expired)
