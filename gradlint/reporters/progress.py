"""The progress display of long runs: files done / total and the time elapsed, on stderr.

Shown only on a terminal (never in a pipe, a CI log or with ``--quiet``) and only once a run
has taken about a second, so short runs print nothing. It is drawn by the progress hook of
:func:`gradlint.runner.run` and never starts a thread (the runner forks its workers only
while it is the one thread), so it refreshes as files finish.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from types import TracebackType
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress, TaskID

DELAY = 1.0
"""Seconds a run goes on before the display appears."""


def progress_wanted(stream: TextIO, quiet: bool, environ: Mapping[str, str]) -> bool:
    """Whether a run reporting on ``stream`` shows progress: a terminal, not ``--quiet``,
    not CI (``CI`` set) and not a dumb terminal."""
    if quiet or environ.get("CI") or environ.get("TERM") == "dumb":
        return False
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


class ProgressDisplay:
    """A progress hook (``display(done, total)``) that draws a rich progress bar on
    ``console`` once ``delay`` seconds have passed; a context manager that removes it."""

    def __init__(self, console: Console, delay: float = DELAY, clock: Callable[[], float] = time.monotonic) -> None:
        self._console = console
        self._delay = delay
        self._clock = clock
        self._started = clock()
        self._progress: Progress | None = None
        self._task: TaskID | None = None

    def __call__(self, done: int, total: int) -> None:
        if self._progress is None:
            if self._clock() - self._started < self._delay:
                return
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

            self._progress = Progress(TextColumn("Checking"), BarColumn(), MofNCompleteColumn(),
                                      TextColumn("{task.fields[elapsed]}"), console=self._console, auto_refresh=False,
                                      transient=True, redirect_stdout=False, redirect_stderr=False)
            self._progress.start()
            self._task = self._progress.add_task("check", total=total, elapsed="")
        assert self._task is not None
        seconds = int(self._clock() - self._started)
        elapsed = f"{seconds // 3600}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"  # since the run began
        self._progress.update(self._task, completed=done, total=total, elapsed=elapsed)
        self._progress.refresh()

    def __enter__(self) -> ProgressDisplay:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        if self._progress is not None:
            self._progress.stop()
