"""The ``gradlint`` command's entry point (and ``python -m gradlint``'s).

Loading the command line takes a noticeable fraction of a second; a Ctrl-C in that time
would otherwise end in an import traceback. Until the command line is loaded, SIGINT ends the
run as a later Ctrl-C does: one line, exit status 130. This module imports nothing of
gradlint's before it installs that handler (``import gradlint`` itself loads nothing).
"""

from __future__ import annotations

import os
import signal
import sys
from types import FrameType


def _interrupted(signum: int, frame: FrameType | None) -> None:
    try:
        os.write(2, b"gradlint: interrupted\n")
    except OSError:
        pass
    os._exit(130)


def main() -> None:
    """Load the command line with Ctrl-C handled, then run it (it handles Ctrl-C itself)."""
    previous = signal.getsignal(signal.SIGINT)
    if previous is signal.default_int_handler:  # not ignored (a background job) nor handled by an embedder
        signal.signal(signal.SIGINT, _interrupted)
    from gradlint.cli import main as command_line

    if previous is signal.default_int_handler:
        signal.signal(signal.SIGINT, previous)
    sys.exit(command_line())
