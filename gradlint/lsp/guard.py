"""The command line's guards, for the language server: the size limit and the time budget.

A document over its configuration's ``max-file-size`` is not analysed, and an analysis
that uses up its CPU budget is stopped; either way the document gets one GL000 saying so
(never silence, never a server stuck on one document). The budget of the command line
needs the main thread's timer signal; the server lints on a worker thread, so a watchdog
thread measures that thread's own CPU time and raises :class:`AnalysisTimeout` into it.
"""

from __future__ import annotations

import ctypes
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from gradlint.budget import AnalysisTimeout
from gradlint.catalogue import SYNTAX_ERROR
from gradlint.diagnostics import Diagnostic, Span
from gradlint.settings import Settings

POLL_SECONDS = 0.05
"""How often the watchdog looks at the lint thread's CPU time."""


class _Expired(BaseException):
    """Raised into the lint thread by the watchdog (created without arguments there)."""


def can_interrupt_thread() -> bool:
    """Whether :func:`thread_budget` can stop a block here (per-thread CPU clocks)."""
    return hasattr(time, "pthread_getcpuclockid")


@contextmanager
def thread_budget(seconds: float) -> Iterator[None]:
    """Raise :class:`AnalysisTimeout` out of the block once the calling thread has used
    ``seconds`` of CPU time in it (0: no budget; nor without per-thread CPU clocks). As in
    :func:`gradlint.budget.time_budget`, whatever leaves the block after the budget is spent
    becomes the AnalysisTimeout."""
    if seconds <= 0 or not can_interrupt_thread():
        yield
        return
    ident = threading.get_ident()
    clock = time.pthread_getcpuclockid(ident)
    start = time.clock_gettime(clock)
    done, expired = threading.Event(), threading.Event()

    def watch() -> None:
        while not done.wait(POLL_SECONDS):
            if time.clock_gettime(clock) - start > seconds:
                expired.set()
                ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(ident), ctypes.py_object(_Expired))
                return

    watcher = threading.Thread(target=watch, name="gradlint-budget", daemon=True)
    watcher.start()
    try:
        yield
    except BaseException as exc:
        if expired.is_set():
            raise AnalysisTimeout(seconds) from None if isinstance(exc, _Expired) else exc
        raise
    finally:
        done.set()
        watcher.join()
        if expired.is_set():  # an exception raised but not yet delivered is dropped
            ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(ident), None)
    if expired.is_set():
        raise AnalysisTimeout(seconds)


def not_analysed(path: str, reason: str, settings: Settings) -> list[Diagnostic]:
    """The GL000 of a document left unanalysed (none when GL000 is not selected)."""
    if not settings.enabled(SYNTAX_ERROR.code):
        return []
    return [Diagnostic(path, Span(1, 1, 1, 1), SYNTAX_ERROR.code, SYNTAX_ERROR.name, SYNTAX_ERROR.severity,
                       f"not analysed: {reason}")]


def over_limit(text: str, limit: int) -> str | None:
    """Why ``text`` is too large to analyse under a ``max-file-size`` of ``limit`` bytes (0:
    no limit), or None."""
    size = len(text.encode("utf-8", "surrogatepass"))
    if not limit or size <= limit:
        return None
    return f"{size} bytes is over the {limit}-byte limit (max-file-size = 0 in the configuration checks it)"
