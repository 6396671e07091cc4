"""Ctrl-C while the command line is still loading ends the run as a later Ctrl-C does: one
line on stderr, exit status 130, no import traceback."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import ROOT

# A finder that sends the process SIGINT as ``module`` starts to load, then the entry point.
_AT_IMPORT = """\
import os, signal, sys
class Interrupt:
    def find_spec(self, name, path=None, target=None):
        if name == {module!r}:
            os.kill(os.getpid(), signal.SIGINT)
        return None
sys.meta_path.insert(0, Interrupt())
sys.argv = ["gradlint", "check", "."]
from gradlint.entry import main
main()
"""


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("GRADLINT_")}


@pytest.mark.parametrize("module", ["gradlint.cli", "click", "click.core", "gradlint.cache", "gradlint.config",
                                    "gradlint.reporters", "gradlint.runner", "gradlint.show_settings"])
def test_ctrl_c_while_the_command_line_loads(module: str, tmp_path: Path) -> None:
    result = subprocess.run([sys.executable, "-c", _AT_IMPORT.format(module=module)], cwd=tmp_path, env=_env(),
                            capture_output=True, text=True, timeout=60)
    assert (result.returncode, result.stdout, result.stderr) == (130, "", "gradlint: interrupted\n")


def test_the_handler_is_the_default_one_again_once_loaded(tmp_path: Path) -> None:
    probe = ("import signal, sys\nsys.argv = ['gradlint', 'version']\nimport gradlint.entry as e\n"
             "try:\n    e.main()\nexcept SystemExit as exit:\n"
             "    print(exit.code, signal.getsignal(signal.SIGINT) is signal.default_int_handler)")
    result = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, env=_env(), capture_output=True, text=True,
                            timeout=60)
    assert result.stdout.splitlines() == ["gradlint 0.1.0", "0 True"]


def test_an_ignored_sigint_stays_ignored(tmp_path: Path) -> None:
    """A run started with SIGINT ignored (``nohup``, a background job) is not made interruptible."""
    probe = ("import signal, sys\nsignal.signal(signal.SIGINT, signal.SIG_IGN)\nsys.argv = ['gradlint', 'version']\n"
             "import gradlint.entry as e\ntry:\n    e.main()\nexcept SystemExit:\n"
             "    print(signal.getsignal(signal.SIGINT) is signal.SIG_IGN)")
    result = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, env=_env(), capture_output=True, text=True,
                            timeout=60)
    assert result.stdout.splitlines() == ["gradlint 0.1.0", "True"]


@pytest.mark.parametrize("delay", [0.25, 0.35, 0.5, 0.7, 1.0])
def test_ctrl_c_early_in_a_real_run(delay: float, tmp_path: Path) -> None:
    """``python -m gradlint`` interrupted at several moments of its first second (loading, then
    linting): one line and status 130 each time. (Before the interpreter itself has started,
    well under these delays, a SIGINT kills it as it does any Python program.)"""
    process = subprocess.Popen([sys.executable, "-m", "gradlint", "check", "--no-cache", str(ROOT / "fixtures" / "rules")],
                               cwd=tmp_path, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(delay)
    process.send_signal(signal.SIGINT)
    stdout, stderr = process.communicate(timeout=60)
    if process.returncode == 1:  # the run had already ended
        pytest.skip("finished before the signal")
    assert "Traceback" not in stderr
    assert (process.returncode, stderr) == (130, "gradlint: interrupted\n")
