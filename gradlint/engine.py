"""The core: a pure function from (source, path, settings) to sorted diagnostics.

Text tests (:mod:`gradlint.prefilter`, asked once) -> ``ast`` screen (syntax judge, module
facts, candidate units) -> libcst parse of each candidate unit -> training-loop model ->
rules -> diagnostics. The runner (command line, cache, process pool) and the language
server call :func:`lint_source` or :func:`analyse_bytes`.
"""

from __future__ import annotations

import ast
import dataclasses
import re
import warnings
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import libcst as cst

from gradlint.catalogue import SYNTAX_ERROR, UNUSED_SUPPRESSION
from gradlint.diagnostics import Diagnostic, Span
from gradlint.gc_pause import collection_paused
from gradlint.model.build import build_loops
from gradlint.model.dispatch import dispatched
from gradlint.model.events import TrainingLoop
from gradlint.model.unit import UnitLibrary
from gradlint.model.update_scope import reached
from gradlint.prefilter import (
    EVERYTHING,
    UnitFilter,
    Verdict,
    judge,
    might_hold_suppression,
    might_hold_training_loop,
    suppressions_wanted,
    worth_reading,
)
from gradlint.project.context import ProjectContext
from gradlint.project.index import ProjectIndex
from gradlint.project.layout import project_root
from gradlint.rules import MODULE_RULES, RULES
from gradlint.screen import Screen, screen
from gradlint.settings import Settings
from gradlint.shared_fixes import share_fixes
from gradlint.source import SourceError, decode, parse_python, python_lines
from gradlint.suppression import apply_suppressions
from gradlint.target import newer_syntax

_PROCESS_INDEX = ProjectIndex()
"""The project modules this process has read, by content digest (files are read again when
they change on disk): what a lint shares with the next when its caller keeps no index."""


@dataclass
class Reads:
    """What a lint learnt beyond its own module: the other project modules it read (path:
    digest; None for a module file an import looked for and did not find), and the diagnostics
    its loops give at lines of other project modules (a helper's defect, reported where the
    call is written; their path is the helper's absolute path)."""

    uses: dict[Path, str | None] = field(default_factory=dict)
    elsewhere: list[Diagnostic] = field(default_factory=list)


_RECORDING: list[Reads] = []


@contextmanager
def recording_uses() -> Iterator[Reads]:
    """Collect what every lint in the block reads of other modules; ``elsewhere`` holds the
    last lint's diagnostics at lines of other modules (a fixer's final pass)."""
    record = Reads()
    _RECORDING.append(record)
    try:
        yield record
    finally:
        _RECORDING.remove(record)


def lint_bytes(data: bytes, path: str, settings: Settings, *, full: bool = False) -> list[Diagnostic]:
    """:func:`analyse_bytes` after the text test on the raw bytes
    (:func:`gradlint.prefilter.worth_reading`), for a caller that has not asked it."""
    if not full and not worth_reading(data, settings):
        return []
    return analyse_bytes(data, path, settings, full=full)


def analyse_bytes(data: bytes, path: str, settings: Settings, *, full: bool = False,
                  reads: Reads | None = None) -> list[Diagnostic]:
    """Decode ``data`` like Python does, then lint it; undecodable text is a GL000.

    The caller has found the bytes :func:`gradlint.prefilter.worth_reading` (the runner does).
    """
    try:
        text = decode(data).text
    except SourceError as exc:
        return _syntax_error(path, exc.message, exc.line, exc.column, settings)
    return lint_source(text, path, settings, full=full, reads=reads)


@collection_paused()
def lint_source(source: str, path: str, settings: Settings, *, verdict: Verdict | None = None,
                full: bool = False, project: ProjectIndex | None = None,
                reads: Reads | None = None, share: bool = True) -> list[Diagnostic]:
    """All diagnostics for one module's text, suppression comments applied, sorted by line,
    column and code.

    ``reads`` (else the innermost :func:`recording_uses` block, if any) hears the other
    project modules the lint read and the diagnostics its loops give in them (the helper's
    suppression comments applied; they carry no fix: a fix edits the linted file only).

    ``verdict`` is the text test's :func:`gradlint.prefilter.judge` on ``source``, when the
    caller has asked it; it is followed, not asked again. ``full`` turns off every shortcut
    (text tests, unit selection): each function and top-level statement of the module is
    parsed with libcst. It is the reference the fast path is tested against
    (tests/test_fast_path.py): the shortcuts must never change a result. ``share`` gives a
    finding the fix of another at the same call when that fix resolves it too
    (:mod:`gradlint.shared_fixes`).
    """
    if full:
        verdict = EVERYTHING
    elif verdict is None:
        verdict = judge(source)
    if not verdict.training:
        if verdict.suppressions and suppressions_wanted(settings) and not settings.ignore_noqa and _parses(source):
            return apply_suppressions([], source, path, settings)
        return []  # a file that does not parse has no analysis, so no suppression is "unused"
    scan = training_loops(source, path, settings, full=full, project=project) if verdict.loop else _judged(source, path)
    records = [reads] if reads is not None else _RECORDING[-1:]
    for record in records:
        record.uses.update(scan.used)
        record.elsewhere = []
    if scan.error is not None and scan.error.message.startswith("syntax error") and newer_syntax(source, settings):
        return []  # valid for the target version, which this Python cannot read: not analysed
    if scan.error is not None:
        return [scan.error] if settings.enabled(scan.error.code) else []
    found: dict[tuple[str, Span], Diagnostic] = {}
    foreign: dict[tuple[str, str, Span], Diagnostic] = {}
    for loop in scan.loops + scan.updates:
        for diagnostic in _check(loop, path, settings):
            if diagnostic.path == path:
                found.setdefault((diagnostic.code, diagnostic.span), diagnostic)
            else:
                foreign.setdefault((diagnostic.path, diagnostic.code, diagnostic.span), diagnostic)
    for diagnostic in _check_module(source, path, settings, scan.loops, scan.tree, project, records):
        if diagnostic.path == path:
            found.setdefault((diagnostic.code, diagnostic.span), diagnostic)
        else:
            foreign.setdefault((diagnostic.path, diagnostic.code, diagnostic.span), diagnostic)
    if foreign and records:
        elsewhere = _suppressed_elsewhere(list(foreign.values()), settings, project or _PROCESS_INDEX)
        for record in records:
            record.elsewhere = elsewhere
    diagnostics = sorted(found.values(), key=Diagnostic.sort_key)
    if share and len(diagnostics) > 1:
        diagnostics = share_fixes(diagnostics, source, lambda text: lint_source(
            text, path, settings, full=full, project=project, reads=Reads(), share=False))
    if settings.ignore_noqa or not verdict.suppressions or (not diagnostics and not suppressions_wanted(settings)):
        return diagnostics  # no suppression comment, or nothing to suppress and no GL900: skip tokenizing
    return apply_suppressions(diagnostics, source, path, settings)


def _parses(text: str) -> bool:
    """Whether the running Python accepts ``text``."""
    try:
        parse_python(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


@dataclass(frozen=True)
class LoopScan:
    """The training loops of a module, or the GL000 diagnostic that stops its analysis."""

    loops: list[TrainingLoop] = field(default_factory=list)
    error: Diagnostic | None = None
    used: dict[Path, str | None] = field(default_factory=dict)  # other modules read: digest (None: absent)
    updates: list[TrainingLoop] = field(default_factory=list)  # update scopes no loop reaches (model/update_scope.py)
    tree: ast.Module | None = None  # the module's ast tree, when it was parsed


def _judged(source: str, path: str) -> LoopScan:
    """A text that cannot form a loop: its syntax judged (GL000), but no walk and no libcst."""
    try:
        judge_syntax(source)
    except SyntaxError as exc:
        return LoopScan(error=_syntax_diagnostic(path, f"syntax error: {exc.msg}", exc.lineno or 1, exc.offset or 1))
    except (RecursionError, MemoryError):
        return LoopScan(error=_syntax_diagnostic(path, "file is too deeply nested to analyse", 1, 1))
    return LoopScan()


def training_loops(source: str, path: str, settings: Settings, *, full: bool = False,
                   project: ProjectIndex | None = None) -> LoopScan:
    """The loop model of a module (of the units that can form a loop unless ``full``), or
    the GL000 diagnostic that stops its analysis; ``project`` as for :func:`lint_source`."""
    try:
        screened = screen(source, settings.names, every_unit=full)
    except SyntaxError as exc:
        return LoopScan(error=_syntax_diagnostic(path, f"syntax error: {exc.msg}", exc.lineno or 1, exc.offset or 1))
    except (RecursionError, MemoryError):
        return LoopScan(error=_syntax_diagnostic(path, "file is too deeply nested to analyse", 1, 1))
    with _project_context(source, path, settings, project, screened.tree) as context:
        return dataclasses.replace(_loops(screened, source, path, context, full), tree=screened.tree)


@contextmanager
def _project_context(source: str, path: str, settings: Settings, project: ProjectIndex | None,
                     tree: ast.Module | None) -> Iterator[ProjectContext]:
    """The module read as part of its project (``project``, else the process's index) while the
    block runs; the index records the other modules it reads in the context's ``used``."""
    index = _PROCESS_INDEX if project is None else project
    context = ProjectContext(Path(path), source, index, settings.names, tree)
    try:
        yield context
    finally:
        index.record_reads(None)
        if project is None:  # the next lint reads this module from disk, as it is there
            index.forget_text(Path(path))


def _loops(screened: Screen, source: str, path: str, context: ProjectContext, full: bool) -> LoopScan:
    """The loops of a screened module read as part of its project."""
    lines = python_lines(source)  # numbered like the ast's units (a lone "\r" ends a line)
    reaching = context.reaching_names(None if full else _names_used(screened, lines))
    project_callers = [unit for unit, calls in screened.callers if calls & reaching]
    roots = screened.units + (screened.other_units if full else project_callers)
    if not roots:
        return LoopScan()
    units = UnitFilter(lines, screened.units, screened.facts)
    # a method that only hands over to another module's training function is followed too
    library = UnitLibrary(lines, screened.units + project_callers, screened.facts, context, Path(path), dispatched)
    loops: list[TrainingLoop] = []
    reaching |= {unit.name for unit in project_callers}  # a call to such a method reaches there too
    for unit in roots:
        if not full and not units.could_form_loop(unit) and not units.names_any(unit, reaching) and (
                not units.could_update(unit)):
            continue
        try:
            loops.extend(build_loops(library.get(unit), library.resolve))
        except (cst.ParserSyntaxError, RecursionError):
            continue  # the running Python accepted it; libcst's grammar is the limit here
    training = [loop for loop in loops if not loop.update_only]
    updates = [loop for loop in loops if loop.update_only and not reached(loop, training)]
    return LoopScan(training, used=dict(context.used), updates=updates)


def _names_used(screened: Screen, lines: list[str]) -> frozenset[str]:
    """The names through which the fast path may reach another module: those the other units
    call, and the identifiers of the candidate units (only these imports are looked into)."""
    names = set().union(*(calls for _, calls in screened.callers))
    for unit in screened.units:
        names.update(_IDENTIFIER.findall("".join(lines[unit.start_line - 1 : unit.end_line])))
    return frozenset(names)


_IDENTIFIER = re.compile(r"\w+")


def judge_syntax(source: str) -> None:
    """Raise what ``ast.parse(source)`` raises, if anything, without keeping a syntax tree.

    Compiling to bytecode builds no Python tree and is about a third cheaper. It also
    rejects code the parser accepts (``return`` outside a function) and may warn, so a
    failure is judged again by the parser itself and warnings are silenced.
    """
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(source, "<gradlint>", "exec", dont_inherit=True)
    except Exception:  # noqa: BLE001 - whatever it is, the parser's own verdict decides
        parse_python(source)


def _check(loop: TrainingLoop, path: str, settings: Settings) -> Iterable[Diagnostic]:
    """The loop's diagnostics; one written in another project module (a helper the loop
    calls) has that module's absolute path and names the loop."""
    elsewhere = _spans_elsewhere(loop)
    where = ""
    for code, rule in RULES.items():
        if not settings.enabled(code) or (loop.update_only and not rule.reads_update_scopes):
            continue
        info = rule.info
        for finding in rule.check(loop):
            if finding.span not in elsewhere:
                yield Diagnostic(path, finding.span, info.code, info.name, info.severity, finding.message, finding.fix,
                                 detail=finding.detail)
                continue
            home = elsewhere[finding.span]
            if home is None:
                continue  # the same span in two other modules: cannot tell which
            where = where or _loop_place(loop, path)
            yield Diagnostic(str(home), finding.span, info.code, info.name, info.severity,
                             f"{finding.message} (in the loop at {where})", detail=finding.detail)


def _spans_elsewhere(loop: TrainingLoop) -> dict[Span, Path | None]:
    """Spans of the loop's events and gates written in other project modules (and at no
    place of this module), with the module they are written in (None: in more than one)."""
    foreign = {id(e.unit): e.unit for e in loop.events if e.unit.home is not None}
    if not foreign:
        return {}
    here = {e.span for e in loop.events if e.unit.home is None}
    placed: list[tuple[Span, Path | None]] = [(e.span, e.unit.home) for e in loop.events if e.unit.home is not None]
    placed += [(g.span, unit.home) for g in loop.gates for unit in foreign.values() if g.node in unit.positions]
    spans: dict[Span, Path | None] = {}
    for span, home in placed:
        if span not in here:
            spans[span] = home if spans.get(span, home) == home else None
    return spans


def _loop_place(loop: TrainingLoop, path: str) -> str:
    """``trainer/loop.py:13``: the loop's file (from its project's root) and line."""
    return f"{_shown(path)}:{loop.span.line}"


def _shown(path: str) -> str:
    """The module's file from its project's root (its name outside a project)."""
    own = Path(path).absolute()
    try:
        return own.relative_to(project_root(own)).as_posix()
    except ValueError:
        return own.name


def _suppressed_elsewhere(diagnostics: list[Diagnostic], settings: Settings, index: ProjectIndex) -> list[Diagnostic]:
    """``diagnostics`` (at lines of other modules) less those their module's comments suppress
    (its unused suppressions are its own lint's to report), sorted."""
    if settings.ignore_noqa:
        return sorted(diagnostics, key=Diagnostic.sort_key)
    by_home: dict[str, list[Diagnostic]] = {}
    for diagnostic in diagnostics:
        by_home.setdefault(diagnostic.path, []).append(diagnostic)
    kept: list[Diagnostic] = []
    for home, found in by_home.items():
        text = index.text(Path(home))
        if text is not None and might_hold_suppression(text):
            found = [d for d in apply_suppressions(found, text, home, settings) if d.code != UNUSED_SUPPRESSION.code]
        kept.extend(found)
    return sorted(kept, key=Diagnostic.sort_key)


def _check_module(source: str, path: str, settings: Settings, loops: list[TrainingLoop],
                  tree: ast.Module | None, project: ProjectIndex | None, records: list[Reads]) -> list[Diagnostic]:
    """Findings of the module rules whose word the text holds (its syntax is judged already;
    ``tree`` is its ``ast`` tree when it was parsed), read as part of the module's project (the
    modules they read are recorded like the loops')."""
    if not might_hold_training_loop(source):
        return []  # the full analysis too: the same answer as the fast path's text test
    rules = [rule for code, rule in MODULE_RULES.items()
             if settings.enabled(code) and any(word in source for word in rule.words)]
    if not rules:
        return []
    if tree is None:
        try:
            tree = parse_python(source)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return []
    found: list[Diagnostic] = []
    lines = python_lines(source)
    with _project_context(source, path, settings, project, tree) as context:
        for rule in rules:
            info = rule.info
            for finding in rule.check_module(tree, lines, loops, context):
                if finding.home is not None:  # written in another module (a helper's save): no fix there
                    home, line = finding.home
                    found.append(Diagnostic(str(home), finding.span, info.code, info.name, info.severity,
                                            f"{finding.message} (in the loop at {_shown(path)}:{line})",
                                            detail=finding.detail))
                    continue
                found.append(Diagnostic(path, finding.span, info.code, info.name, info.severity,
                                        finding.message, finding.fix, detail=finding.detail))
    for record in records:
        record.uses.update(context.used)
    return found


def _syntax_diagnostic(path: str, message: str, line: int, column: int) -> Diagnostic:
    span = Span(line, max(column, 1), line, max(column, 1))
    return Diagnostic(path, span, SYNTAX_ERROR.code, SYNTAX_ERROR.name, SYNTAX_ERROR.severity, message)


def _syntax_error(path: str, message: str, line: int, column: int, settings: Settings) -> list[Diagnostic]:
    if not settings.enabled(SYNTAX_ERROR.code):
        return []
    return [_syntax_diagnostic(path, message, line, column)]
