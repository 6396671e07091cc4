"""The core: a pure function from (source, path, settings) to sorted diagnostics.

Text filter -> ``ast`` screen (syntax judge, module facts, candidate units) -> libcst parse
of each candidate unit -> training-loop model -> rules -> diagnostics. The CLI, the cache,
the process pool and the language server all call :func:`lint_source` or :func:`lint_bytes`.
"""

from __future__ import annotations

from collections.abc import Iterable

import libcst as cst

from gradlint.diagnostics import Diagnostic, Span
from gradlint.model.build import build_loops
from gradlint.model.events import TrainingLoop
from gradlint.model.unit import parse_unit
from gradlint.rules import RULES, SYNTAX_ERROR, UNUSED_SUPPRESSION
from gradlint.screen import might_hold_training_loop, screen
from gradlint.settings import Settings
from gradlint.source import SourceError, decode
from gradlint.suppression import apply_suppressions, might_hold_suppression


def lint_bytes(data: bytes, path: str, settings: Settings) -> list[Diagnostic]:
    """Decode ``data`` like Python does, then lint it; undecodable text is a GL000."""
    latin = data.decode("latin-1")
    if not might_hold_training_loop(latin) and not _unused_suppressions_wanted(latin, settings):
        return []
    try:
        text = decode(data).text
    except SourceError as exc:
        return _syntax_error(path, exc.message, exc.line, exc.column, settings)
    return lint_source(text, path, settings)


def lint_source(source: str, path: str, settings: Settings) -> list[Diagnostic]:
    """All diagnostics for one module's text, suppression comments applied, sorted by line,
    column and code."""
    if not might_hold_training_loop(source):
        if _unused_suppressions_wanted(source, settings):
            return apply_suppressions([], source, path, settings)
        return []
    loops = training_loops(source, path, settings)
    if isinstance(loops, Diagnostic):
        return [loops] if settings.enabled(loops.code) else []
    found: dict[tuple[str, Span], Diagnostic] = {}
    for loop in loops:
        for diagnostic in _check(loop, path, settings):
            found.setdefault((diagnostic.code, diagnostic.span), diagnostic)
    return apply_suppressions(sorted(found.values(), key=Diagnostic.sort_key), source, path, settings)


def _unused_suppressions_wanted(text: str, settings: Settings) -> bool:
    """GL900 is on and ``text`` may hold a suppression comment (that then suppresses nothing)."""
    return settings.enabled(UNUSED_SUPPRESSION.code) and might_hold_suppression(text)


def training_loops(source: str, path: str, settings: Settings) -> list[TrainingLoop] | Diagnostic:
    """The loop model of a module, or the GL000 diagnostic that stops its analysis."""
    try:
        screened = screen(source, settings.names)
    except SyntaxError as exc:
        return _syntax_diagnostic(path, f"syntax error: {exc.msg}", exc.lineno or 1, exc.offset or 1)
    except (RecursionError, MemoryError):
        return _syntax_diagnostic(path, "file is too deeply nested to analyse", 1, 1)
    if not screened.units:
        return []
    lines = source.split("\n")
    lines = [line + "\n" for line in lines[:-1]] + [lines[-1]]
    loops: list[TrainingLoop] = []
    for unit in screened.units:
        try:
            model = parse_unit(lines, unit, screened.facts)
            loops.extend(build_loops(model))
        except (cst.ParserSyntaxError, RecursionError):
            continue  # the running Python accepted it; libcst's grammar is the limit here
    return loops


def _check(loop: TrainingLoop, path: str, settings: Settings) -> Iterable[Diagnostic]:
    for code, rule in RULES.items():
        if not settings.enabled(code):
            continue
        info = rule.info
        for finding in rule.check(loop):
            yield Diagnostic(path, finding.span, info.code, info.name, info.severity, finding.message, finding.fix)


def _syntax_diagnostic(path: str, message: str, line: int, column: int) -> Diagnostic:
    span = Span(line, max(column, 1), line, max(column, 1))
    return Diagnostic(path, span, SYNTAX_ERROR.code, SYNTAX_ERROR.name, SYNTAX_ERROR.severity, message)


def _syntax_error(path: str, message: str, line: int, column: int, settings: Settings) -> list[Diagnostic]:
    if not settings.enabled(SYNTAX_ERROR.code):
        return []
    return [_syntax_diagnostic(path, message, line, column)]
