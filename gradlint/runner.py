"""Run the core over files: read, filter, look up the cache, lint or fix the rest, collect.

One pipeline for every mode (``check``, ``--fix``, ``--diff``, ``--add-noqa``, stdin). The
main process triages every file in order: a file over the size limit is skipped (and
named in :attr:`RunResult.skipped`), an unreadable one is a GL000, one that fails the text
test (:func:`gradlint.prefilter.worth_reading`) has no diagnostics, one whose cache entry
exists is answered from it (fixing: when it has nothing to fix). Only the rest is linted or
fixed: in this process, or with ``jobs > 1`` in a pool of worker processes that read each
file again, lint or fix it (writing it back with :func:`gradlint.writer.write_atomic`) and
store the result in the cache themselves, each within its time budget. The report order
never depends on the pool: results are put back in their file's slot and sorted.
"""

from __future__ import annotations

import dataclasses
import enum
import gc
import os
import signal
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, TypeAlias

from gradlint.budget import DEFAULT_TIMEOUT, AnalysisTimeout, time_budget
from gradlint.cache import Cache, content_digest
from gradlint.catalogue import SYNTAX_ERROR
from gradlint.diagnostics import Diagnostic, Span
from gradlint.prefilter import filter_flavour, worth_reading
from gradlint.project.layout import project_root
from gradlint.settings import Settings
from gradlint.source import read_source_file, require_regular

if TYPE_CHECKING:
    import multiprocessing.context

    from gradlint.writer import FileFix

# The fixer and the writer are imported where a run fixes: a check does not load them.

DEFAULT_MAX_FILE_SIZE = 1 << 20
"""Files larger than this many bytes are skipped unless the limit is raised (0: no limit)."""

_CHUNKS_PER_WORKER = 4
"""Work is cut into about this many chunks per worker: few enough that the per-task cost of
the pool stays small, enough that the workers finish together."""


@dataclass(frozen=True)
class Skipped:
    """A file left out because it is larger than its size limit."""

    path: str
    size: int
    limit: int


@dataclass
class RunResult:
    """Diagnostics of a run (fixing: what remains), how many files were checked, which were
    skipped for their size, which ran out of their analysis time budget (display paths; no
    diagnostics) and, fixing, each checked file's :class:`FileFix`."""

    diagnostics: list[Diagnostic] = field(default_factory=list)
    files_checked: int = 0
    skipped: list[Skipped] = field(default_factory=list)
    timed_out: list[str] = field(default_factory=list)
    fixes: list[FileFix] = field(default_factory=list)


def display_path(path: Path) -> str:
    """Paths relative to the current directory where possible, with forward slashes; a
    symlink is shown under its own name (its folder is resolved, not the link)."""
    try:
        own = path.absolute()
        resolved = own.parent.resolve() / own.name if own.name not in ("", ".", "..") else own.resolve()
        rel = resolved.relative_to(Path.cwd().resolve())
        return rel.as_posix()
    except (ValueError, OSError):
        return path.as_posix()


class _PathNames:
    """:func:`display_path` for the many files of one run, resolving each folder once.

    ``Path.resolve`` checks every component of every path; a file is shown as its folder's
    resolution plus its own name (a symlink under its own name, not its target's), so
    folders are remembered (for this run only: a later run sees a changed symlink), and on
    POSIX a folder is its parent's resolution plus its own name, resolved again only when it
    is a symlink (one ``lstat`` per folder). Plain ``os.path`` strings: pathlib's objects
    cost more than the file system calls here. :meth:`absolute` is ``os.path.abspath`` of
    the run's current folder.
    """

    def __init__(self) -> None:
        self._here = os.getcwd()
        self._cwd = os.path.realpath(self._here)
        self._prefix = self._cwd if self._cwd.endswith(os.sep) else self._cwd + os.sep
        self._folders: dict[str, str] = {}

    def __call__(self, path: Path) -> str:
        text = os.fspath(path)
        folder, name = os.path.split(text)
        real = os.path.realpath(text) if name in ("", ".", "..") else os.path.join(self._folder(folder), name)
        if real == self._cwd:
            return "."
        if real.startswith(self._prefix):
            shown = real[len(self._prefix):]
            return shown if os.sep == "/" else shown.replace(os.sep, "/")
        return path.as_posix()

    def _folder(self, folder: str) -> str:
        """``os.path.realpath(folder)`` (the current folder for ""), remembered."""
        found = self._folders.get(folder)
        if found is None:
            head, tail = os.path.split(folder)
            if os.name != "posix" or tail in ("", ".", ".."):
                found = os.path.realpath(folder or os.curdir)
            else:
                candidate = os.path.join(self._folder(head) if head else self._cwd, tail)
                found = os.path.realpath(candidate) if os.path.islink(candidate) else candidate
            self._folders[folder] = found
        return found

    def absolute(self, path: Path) -> str:
        """``os.path.abspath(path)``, without asking for the current folder again."""
        return os.path.normpath(os.path.join(self._here, path))


def lint_file(path: Path, settings: Settings) -> list[Diagnostic]:
    """Lint one file (a notebook cell by cell) from disk, as :func:`run` does, without the
    cache or a budget; an unreadable file is one GL000."""
    shown = display_path(path)
    try:
        data = read_source_file(path)
    except OSError as exc:
        return _io_error(shown, exc, settings)
    return _lint_data(data, shown, settings, _is_notebook(path)) if worth_reading(data, settings) else []


def _is_notebook(path: Path) -> bool:
    return path.suffix == ".ipynb"


def _project(path: Path) -> str:
    """The root folder of the project ``path`` belongs to (part of its cache key)."""
    return str(project_root(path.absolute()))


def _lint_data(data: bytes, shown: str, settings: Settings, notebook: bool) -> list[Diagnostic]:
    """The diagnostics of bytes that passed :func:`gradlint.prefilter.worth_reading`."""
    # Imported on first use: a run the cache answers never loads the analysis (nor libcst).
    from gradlint.engine import analyse_bytes
    from gradlint.notebook import lint_notebook

    return lint_notebook(data, shown, settings) if notebook else analyse_bytes(data, shown, settings)


def _shown_elsewhere(diagnostics: list[Diagnostic]) -> list[Diagnostic]:
    """Diagnostics at lines of other project modules (absolute paths), under their shown path."""
    return [dataclasses.replace(d, path=display_path(Path(d.path))) for d in diagnostics]


def _merged(groups: Iterable[list[Diagnostic]], elsewhere: Iterable[list[Diagnostic]]) -> list[Diagnostic]:
    """Every file's own diagnostics, then those its loops gave in other modules, once per
    path, span and code across the run (a module's own diagnostic first), sorted."""
    found = [d for group in groups for d in group]
    seen = {(d.path, d.span, d.code) for d in found}
    for group in elsewhere:
        for diagnostic in group:
            key = (diagnostic.path, diagnostic.span, diagnostic.code)
            if key not in seen:
                seen.add(key)
                found.append(diagnostic)
    return sorted(found, key=Diagnostic.sort_key)


def _io_error(shown: str, exc: OSError, settings: Settings) -> list[Diagnostic]:
    if not settings.enabled(SYNTAX_ERROR.code):
        return []
    reason = exc.strerror or exc.__class__.__name__
    return [Diagnostic(shown, Span(1, 1, 1, 1), SYNTAX_ERROR.code, SYNTAX_ERROR.name,
                       SYNTAX_ERROR.severity, f"I/O error: cannot read file: {reason}")]


def _not_analysed(shown: str, reason: str, settings: Settings) -> list[Diagnostic]:
    """The GL000 of a file left unanalysed (too large, out of time), so that no output
    format passes it silently and the run does not exit 0."""
    if not settings.enabled(SYNTAX_ERROR.code):
        return []
    return [Diagnostic(shown, Span(1, 1, 1, 1), SYNTAX_ERROR.code, SYNTAX_ERROR.name,
                       SYNTAX_ERROR.severity, f"not analysed: {reason}")]


class Mode(enum.Enum):
    """What a run does with each file: report its diagnostics, or fix it (writing the file,
    or only computing the fixed text for a diff)."""

    CHECK = "check"
    FIX = "fix"
    DIFF = "diff"


@dataclass(frozen=True)
class Piped:
    """Bytes that stand for the file ``path`` (stdin): never read from or written to disk,
    reported as ``shown``."""

    path: Path
    shown: str
    data: bytes


Progress = Callable[[int, int], None]
"""The progress hook of :func:`run`: called with (files done, files in all) as files finish."""

Outcome: TypeAlias = "list[Diagnostic] | FileFix | None"
"""What linting one file gave: its diagnostics (checking), its fix (fixing), or None when
it ran out of its time budget."""

Done = tuple["_Task", Outcome, list[Diagnostic]]
"""A task, its outcome, and the diagnostics its loops gave in other project modules (shown paths)."""


@dataclass(frozen=True)
class _Task:
    """A file to lint or fix (read again by whoever does it, unless ``data`` is given);
    ``size`` balances the pool, ``timeout`` is its analysis budget in CPU seconds (0: none)."""

    index: int
    path: Path
    shown: str
    settings: Settings
    size: int
    timeout: float = DEFAULT_TIMEOUT
    mode: Mode = Mode.CHECK
    unsafe: bool = False
    data: bytes | None = None


def run(paths: Sequence[Path | Piped], settings: Settings | Mapping[Path, Settings], *, jobs: int = 1,
        cache: Cache | None = None, max_file_size: int | Mapping[Path, int] = DEFAULT_MAX_FILE_SIZE,
        timeout: float = DEFAULT_TIMEOUT, mode: Mode = Mode.CHECK, unsafe: bool = False,
        progress: Progress | None = None) -> RunResult:
    """Lint, or with ``mode`` fix, every file in ``paths``, with one settings value or one per path.

    ``jobs`` processes do the files the cache cannot answer (1: this process only);
    ``cache`` (optional) answers and stores results; files over ``max_file_size`` bytes (one
    limit or one per path; 0: no limit) are skipped, as is (named in ``timed_out``) a file
    whose analysis uses more than ``timeout`` CPU seconds (0: no limit). Anything but a
    regular file (a FIFO, a device) is an I/O error, never read. A :class:`Piped` entry is
    its bytes. Fixing, ``unsafe`` fixes are applied too, and ``fixes`` holds one
    :class:`FileFix` per file checked, in the order given (``Mode.FIX`` writes them back).
    The diagnostics (what remains, fixing) come sorted, the same for any ``jobs``.
    ``progress`` (optional) hears how many files are done after triage and after each
    file linted.
    """
    result = RunResult()
    found: list[Outcome] = [[] for _ in paths]
    elsewhere: list[list[Diagnostic]] = [[] for _ in paths]
    tasks: list[_Task] = []
    shown_as = _PathNames()
    for index, item in enumerate(paths):
        path = item.path if isinstance(item, Piped) else item
        own = settings if isinstance(settings, Settings) else settings[path]
        shown = item.shown if isinstance(item, Piped) else shown_as(path)
        limit = max_file_size if isinstance(max_file_size, int) else max_file_size[path]
        try:
            if isinstance(item, Piped):
                size, triage = len(item.data), partial(_triage_piped, item.data)
            else:
                status = _regular_status(path)
                size, triage = status.st_size, partial(_triage, path, shown_as.absolute(path), status)
            if limit and size > limit:
                result.skipped.append(Skipped(shown, size, limit))
                found[index] = _outcome(mode, path, shown, _not_analysed(
                    shown, f"{size} bytes is over the {limit}-byte limit (--max-file-size 0 checks it)", own))
                continue
            worth, digest = triage(own, cache)
        except OSError as exc:
            found[index] = _outcome(mode, path, shown, _io_error(shown, exc, own))
            result.files_checked += 1
            continue
        result.files_checked += 1
        notebook = _is_notebook(path)
        cached = cache.get(cache.key(digest, own, notebook, _project(path)), shown) if cache and digest else None
        if cached is not None:
            elsewhere[index] = _shown_elsewhere([d for d in cached if d.path != shown])
            cached = [d for d in cached if d.path == shown]
        if not worth or (cached is not None and (mode is Mode.CHECK or _nothing_to_fix(cached, unsafe, notebook))):
            found[index] = _outcome(mode, path, shown, cached or [])
        else:
            data = item.data if isinstance(item, Piped) else None
            tasks.append(_Task(index, path, shown, own, size, timeout, mode, unsafe, data))
    if cache is not None:
        cache.save_index()
    out_of_time: set[int] = set()
    done = len(paths) - len(tasks)
    if progress is not None:
        progress(done, len(paths))
    for task, outcome, foreign in _lint_tasks(tasks, jobs, cache):
        elsewhere[task.index] = foreign
        done += 1
        if progress is not None:
            progress(done, len(paths))
        if outcome is None:
            out_of_time.add(task.index)
            gave_up = _not_analysed(task.shown, f"its analysis took more than {timeout:g} CPU seconds "
                                                "(--timeout 0 removes the limit)", task.settings)
            outcome = gave_up if mode is Mode.CHECK else _file_fix(
                task.path, task.shown, error=f"not fixed: {AnalysisTimeout(timeout)}", remaining=gave_up)
        found[task.index] = outcome
    result.timed_out = [task.shown for task in tasks if task.index in out_of_time]
    result.fixes = [f for f in found if f is not None and not isinstance(f, list)]
    groups = [f if isinstance(f, list) else [] if f is None else f.remaining for f in found]
    result.diagnostics = _merged(groups, elsewhere)
    return result


def _outcome(mode: Mode, path: Path, shown: str, diagnostics: list[Diagnostic]) -> list[Diagnostic] | FileFix:
    """A file's outcome without linting or fixing it: its diagnostics, or fixing, a fix
    that leaves the file as it is with these diagnostics remaining."""
    return diagnostics if mode is Mode.CHECK else _file_fix(path, shown, remaining=diagnostics)


def _file_fix(path: Path, shown: str, remaining: list[Diagnostic] | None = None, error: str | None = None) -> FileFix:
    """A :class:`~gradlint.writer.FileFix` of the file at ``path`` that changes nothing (yet)."""
    from gradlint.writer import FileFix

    return FileFix(path, shown, remaining=remaining or [], error=error)


def fix_data(data: bytes, path: Path, display: str, settings: Settings, unsafe: bool, notebook: bool) -> FileFix | None:
    """:func:`gradlint.writer.fix_data`, loaded when a run first fixes."""
    from gradlint.writer import fix_data as fixed_data

    return fixed_data(data, path, display, settings, unsafe, notebook)


def _nothing_to_fix(diagnostics: list[Diagnostic], unsafe: bool, notebook: bool) -> bool:
    """Whether a file with these (cached) diagnostics is left as it is by the fixer: none has
    a fix to apply. A notebook's cached diagnostics lack the fixes that span cells, which the
    fixer still tries: only a notebook without diagnostics is known to stay as it is."""
    if notebook:
        return not diagnostics
    from gradlint.fixer import applicable

    return not any(applicable(d.fix, unsafe) for d in diagnostics)


def _regular_status(path: Path) -> os.stat_result:
    """The status of the file at ``path``; OSError unless it is a regular file."""
    status = os.stat(path)
    require_regular(status, path)
    return status


def _triage(path: Path, absolute: str, status: os.stat_result, settings: Settings,
            cache: Cache | None) -> tuple[bool, str | None]:
    """Whether the file passes the text test and, with a cache, the digest of its bytes:
    from the cache's file index (by the ``absolute`` path) when the file is unchanged, else
    by reading it."""
    flavour = filter_flavour(settings)
    facts = cache.recall(absolute, status) if cache else None
    if facts is not None and flavour in facts and (not facts[flavour] or "digest" in facts):
        return facts[flavour], facts.get("digest")
    with open(path, "rb") as handle:
        data = handle.read()
        after = os.fstat(handle.fileno())
    worth = worth_reading(data, settings)
    if cache is None:
        return worth, None
    facts = {**(facts or {}), flavour: worth}
    if worth:
        facts["digest"] = content_digest(data)
    cache.remember(absolute, status, after, facts)
    return worth, facts.get("digest")


def _triage_piped(data: bytes, settings: Settings, cache: Cache | None) -> tuple[bool, str | None]:
    """:func:`_triage` for piped bytes (there is no file to index)."""
    worth = worth_reading(data, settings)
    return worth, content_digest(data) if worth and cache is not None else None


def _lint_tasks(tasks: list[_Task], jobs: int, cache: Cache | None) -> Iterator[Done]:
    """(task, outcome, diagnostics elsewhere) of every task, in no particular order."""
    if not tasks:
        return
    import gradlint.engine  # noqa: F401  (before the pool forks: the workers share it)

    with _fewer_collections():  # forked workers inherit it
        if jobs <= 1 or len(tasks) <= 1:
            for task in tasks:
                yield _lint_task(task, cache)
            return
        jobs = capped_jobs(jobs)
        chunks = _chunks(tasks, jobs * _CHUNKS_PER_WORKER)
        with _context().Pool(min(jobs, len(chunks)), initializer=_ignore_interrupts) as pool:
            for done in pool.imap_unordered(partial(_lint_chunk, cache=cache), chunks):
                yield from done


@contextmanager
def _fewer_collections() -> Iterator[None]:
    """Collect garbage less often while linting (about a tenth faster).

    Parsing makes many short-lived objects and few cycles; with the default thresholds the
    collector runs thousands of times, each full pass walking every long-lived object. The
    objects alive now (imports) are frozen out of its reach and young-generation passes
    happen every 10,000 allocations instead of 700, for the batch only.
    """
    thresholds = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(10_000, *thresholds[1:])
    try:
        yield
    finally:
        gc.set_threshold(*thresholds)
        gc.unfreeze()


def _ignore_interrupts() -> None:
    """In a worker: leave Ctrl-C to the main process, which stops the pool (no traceback
    from every worker)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _chunks(tasks: list[_Task], count: int) -> list[list[_Task]]:
    """Cut ``tasks`` into about ``count`` chunks of similar total size, largest files first
    (each in a chunk of its own when it is larger than a chunk's share)."""
    share = max(1, sum(t.size for t in tasks) // count)
    chunks: list[list[_Task]] = []
    current: list[_Task] = []
    weight = 0
    for task in sorted(tasks, key=lambda t: (-t.size, t.index)):
        current.append(task)
        weight += task.size
        if weight >= share:
            chunks.append(current)
            current, weight = [], 0
    if current:
        chunks.append(current)
    return chunks


def _context() -> multiprocessing.context.BaseContext:
    """``fork`` where it exists and no other thread runs (workers start at once, sharing the
    modules already imported), else the platform's default start method."""
    import multiprocessing  # only a run that lints with a pool needs it
    import threading

    methods = multiprocessing.get_all_start_methods()
    if "fork" in methods and sys.platform.startswith("linux") and threading.active_count() == 1:
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context()


def _lint_task(task: _Task, cache: Cache | None) -> Done:
    """Read, lint (or fix) and cache one file; None when it runs out of its time budget
    (and nothing is cached)."""
    if task.mode is not Mode.CHECK:
        return _fix_task(task, cache)
    try:
        data = task.data if task.data is not None else read_source_file(task.path)
    except OSError as exc:
        return task, _io_error(task.shown, exc, task.settings), []
    notebook = _is_notebook(task.path)
    from gradlint.engine import recording_uses  # the analysis is needed anyway

    try:
        with time_budget(task.timeout), recording_uses() as reads:
            diagnostics = _lint_data(data, task.shown, task.settings, notebook)
    except AnalysisTimeout:
        return task, None, []
    if cache is not None:
        cache.put(cache.key(content_digest(data), task.settings, notebook, _project(task.path)), diagnostics,
                  reads.uses, reads.elsewhere)
    return task, diagnostics, _shown_elsewhere(reads.elsewhere)


def _fix_task(task: _Task, cache: Cache | None) -> Done:
    """Fix one file within its time budget and, with ``Mode.FIX``, write it back. A file
    the fixer leaves as it is has its diagnostics cached (not a notebook: see
    :func:`_nothing_to_fix`). A diagnostic its loops give in another module has no fix
    here (a fix edits the file being fixed only): it is reported as it is."""
    outcome = _file_fix(task.path, task.shown)
    try:
        data = task.data if task.data is not None else read_source_file(task.path)
    except OSError as exc:
        outcome.remaining = _io_error(task.shown, exc, task.settings)
        return task, outcome, []
    notebook = _is_notebook(task.path)
    from gradlint.engine import recording_uses  # the analysis is needed anyway

    try:
        with time_budget(task.timeout), recording_uses() as reads:
            fixed = fix_data(data, task.path, task.shown, task.settings, task.unsafe, notebook)
            if fixed is None:
                outcome.remaining = _lint_data(data, task.shown, task.settings, notebook)
            else:
                outcome = fixed
    except AnalysisTimeout:
        return task, None, []
    if task.mode is Mode.FIX and task.data is None and outcome.output is not None:
        try:
            from gradlint.writer import write_atomic

            write_atomic(task.path, outcome.output, expected=data)
        except OSError as exc:
            with recording_uses() as reads:
                outcome.unchanged(exc.strerror or str(exc), lint_file(task.path, task.settings))
            return task, outcome, _shown_elsewhere(reads.elsewhere)
    if cache is not None and not notebook and not outcome.changed and outcome.error is None:
        cache.put(cache.key(content_digest(data), task.settings, notebook, _project(task.path)), outcome.remaining,
                  reads.uses, reads.elsewhere)
    return task, outcome, _shown_elsewhere(reads.elsewhere)


def _lint_chunk(chunk: list[_Task], cache: Cache | None) -> list[Done]:
    """:func:`_lint_task` for every task of a chunk (in a worker process)."""
    return [_lint_task(task, cache) for task in chunk]


def default_jobs() -> int:
    """The number of CPUs this process may use."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


MAX_JOBS_PER_CPU = 4
"""``--jobs`` beyond this many workers per CPU only costs memory (each worker holds a parser)."""


def capped_jobs(jobs: int) -> int:
    """``jobs`` workers, at most :data:`MAX_JOBS_PER_CPU` per CPU this process may use."""
    return max(1, min(jobs, default_jobs() * MAX_JOBS_PER_CPU))
