"""A per-file budget of CPU time for the analysis: a runaway becomes a notice, not a hang.

The analysis is pure computation (the file is read before it starts), so the budget counts
the CPU time of the process (``ITIMER_VIRTUAL``), not the wall clock: a loaded machine or a
busy pool does not make a file time out, only its own work does. When the budget is spent,
:class:`AnalysisTimeout` is raised into the analysis wherever it is.

The timer needs a signal, so the budget applies in a process's main thread on platforms
with ``setitimer`` (the command line, each worker of its process pool). The language
server's lint thread has its own, a watchdog on the thread's CPU clock
(:func:`gradlint.lsp.guard.thread_budget`); elsewhere (Windows) the block runs without one.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager

DEFAULT_TIMEOUT = 20
"""CPU seconds the analysis of one file may take (the slowest real file takes about one)."""

_LONGEST = 365 * 24 * 3600
"""A budget longer than a year is no budget (and beyond what the timer can be set to)."""


class AnalysisTimeout(BaseException):
    """The analysis of one file used up its budget. A BaseException, like
    KeyboardInterrupt, so that no ``except Exception`` on the way swallows it."""

    def __init__(self, seconds: float) -> None:
        super().__init__(f"the analysis took more than {seconds:g} CPU seconds")
        self.seconds = seconds


def can_interrupt() -> bool:
    """Whether :func:`time_budget` can stop a block here (main thread, ``setitimer``)."""
    return hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()


@contextmanager
def time_budget(seconds: float) -> Iterator[None]:
    """Raise :class:`AnalysisTimeout` out of the block once it has used ``seconds`` of CPU
    time (0 or more than a year: no budget; nor where :func:`can_interrupt` is false).

    The exception is raised wherever the analysis is. Code on its way out may replace it
    (libcst's position tracking raises a KeyError while it unwinds) or swallow it; once the
    budget is spent, whatever leaves the block, an exception or a normal end, becomes the
    AnalysisTimeout: a result computed after the interruption is not trusted.
    """
    if seconds <= 0 or seconds > _LONGEST or not can_interrupt():
        yield
        return
    expired = False

    def expire(signum: int, frame: object) -> None:
        nonlocal expired
        expired = True
        raise AnalysisTimeout(seconds)

    previous = signal.signal(signal.SIGVTALRM, expire)
    signal.setitimer(signal.ITIMER_VIRTUAL, seconds)  # one shot
    try:
        yield
    except BaseException as exc:
        if expired and not isinstance(exc, AnalysisTimeout):
            raise AnalysisTimeout(seconds) from exc
        raise
    finally:
        try:
            signal.setitimer(signal.ITIMER_VIRTUAL, 0)
        finally:
            signal.signal(signal.SIGVTALRM, previous)
    if expired:
        raise AnalysisTimeout(seconds)
