"""The core: a pure function from (source, path, settings) to sorted diagnostics.

Text filter -> ``ast`` screen (syntax judge, module facts, candidate units) -> libcst parse
of each candidate unit -> training-loop model -> rules -> diagnostics. The CLI, the cache,
the process pool and the language server all call :func:`lint_source` or :func:`lint_bytes`.
"""

from __future__ import annotations

import re
import unicodedata
import warnings
from collections.abc import Iterable

import libcst as cst

from gradlint.catalogue import SYNTAX_ERROR, UNUSED_SUPPRESSION
from gradlint.diagnostics import Diagnostic, Span
from gradlint.model.build import build_loops
from gradlint.model.events import TrainingLoop
from gradlint.model.unit import UnitLibrary
from gradlint.rules import RULES
from gradlint.screen import NATIVE_SCALER, ModuleFacts, Unit, might_hold_training_loop, screen, worth_analysing
from gradlint.settings import Settings
from gradlint.source import SourceError, decode, parse_python, python_lines
from gradlint.suppression import apply_suppressions, might_hold_suppression


def lint_bytes(data: bytes, path: str, settings: Settings, *, full: bool = False) -> list[Diagnostic]:
    """Decode ``data`` like Python does, then lint it; undecodable text is a GL000."""
    if not full and not worth_analysing(data, settings):
        return []
    try:
        text = decode(data).text
    except SourceError as exc:
        return _syntax_error(path, exc.message, exc.line, exc.column, settings)
    return lint_source(text, path, settings, full=full)


def lint_source(source: str, path: str, settings: Settings, *, full: bool = False) -> list[Diagnostic]:
    """All diagnostics for one module's text, suppression comments applied, sorted by line,
    column and code.

    ``full`` turns off every shortcut (text filters, unit selection): each function and
    top-level statement of the module is parsed with libcst. It is the reference the fast
    path is tested against (tests/test_fast_path.py): the shortcuts must never change a result.
    """
    if not full and not might_hold_training_loop(source):
        if _unused_suppressions_wanted(source, settings) and _parses(source):
            return apply_suppressions([], source, path, settings)
        return []  # a file that does not parse has no analysis, so no suppression is "unused"
    loops = training_loops(source, path, settings, full=full)
    if isinstance(loops, Diagnostic):
        return [loops] if settings.enabled(loops.code) else []
    found: dict[tuple[str, Span], Diagnostic] = {}
    for loop in loops:
        for diagnostic in _check(loop, path, settings):
            found.setdefault((diagnostic.code, diagnostic.span), diagnostic)
    diagnostics = sorted(found.values(), key=Diagnostic.sort_key)
    if not diagnostics and not settings.enabled(UNUSED_SUPPRESSION.code):
        return diagnostics  # nothing to suppress, no unused suppression to report: skip tokenizing
    return apply_suppressions(diagnostics, source, path, settings)


def _unused_suppressions_wanted(text: str, settings: Settings) -> bool:
    """GL900 is on and ``text`` may hold a suppression comment (that then suppresses nothing)."""
    return settings.enabled(UNUSED_SUPPRESSION.code) and might_hold_suppression(text)


def _parses(text: str) -> bool:
    """Whether the running Python accepts ``text``."""
    try:
        parse_python(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


def training_loops(source: str, path: str, settings: Settings, *, full: bool = False) -> list[TrainingLoop] | Diagnostic:
    """The loop model of a module, or the GL000 diagnostic that stops its analysis."""
    try:
        if not full and not could_form_loop(source):
            judge_syntax(source)  # still the judge of syntax (GL000), but no walk and no libcst
            return []
        screened = screen(source, settings.names, every_unit=full)
    except SyntaxError as exc:
        return _syntax_diagnostic(path, f"syntax error: {exc.msg}", exc.lineno or 1, exc.offset or 1)
    except (RecursionError, MemoryError):
        return _syntax_diagnostic(path, "file is too deeply nested to analyse", 1, 1)
    roots = screened.units + screened.other_units  # other_units: only in the full analysis
    if not roots:
        return []
    lines = python_lines(source)  # numbered like the ast's units (a lone "\r" ends a line)
    helpers = _Helpers(lines, screened.units, screened.facts)
    library = UnitLibrary(lines, screened.units, screened.facts)
    loops: list[TrainingLoop] = []
    for unit in roots:
        if not full and not helpers.could_form_loop(unit):
            continue
        try:
            loops.extend(build_loops(library.get(unit), library.resolve))
        except (cst.ParserSyntaxError, RecursionError):
            continue  # the running Python accepted it; libcst's grammar is the limit here
    return loops


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


def could_form_loop(text: str) -> bool:
    """Whether ``text`` can hold a training loop: one needs a step call and a backward call.

    ``build_loops`` makes a loop only of a scope with a BACKWARD and a STEP event
    (``gradlint/model/calls.py``): STEP comes from a ``.step(...)`` call whose attribute libcst
    reads as written, so ``step`` is in the text; BACKWARD from ``.backward`` /
    ``.manual_backward`` or a name imported as ``torch.autograd.backward``, whose import may
    spell ``backward`` with compatibility characters that Python's parser normalises (NFKC).
    """
    if NATIVE_SCALER in text:
        return True  # backward and step in one call
    if "step" not in text:
        return False
    return "backward" in text or (not text.isascii() and "backward" in unicodedata.normalize("NFKC", text))


class _Helpers:
    """Which units can form a training loop: :func:`could_form_loop` for one unit's lines,
    where a call can stand in for the step or the backward call.

    The model follows calls into the module's training functions (``UnitLibrary.resolve``),
    so a function whose text holds ``step`` (or calls one that does, and so on) may bring a
    STEP into its caller, and likewise for ``backward``, which a local alias of
    ``torch.autograd.backward`` also spells. libcst reads names as written, so a name counts
    when the unit's text holds it as an identifier.
    """

    def __init__(self, lines: list[str], units: list[Unit], facts: ModuleFacts) -> None:
        self._lines = lines
        texts: dict[str, str] = {}
        for unit in units:
            if unit.name != "<module>":
                texts[unit.name] = texts.get(unit.name, "") + self._text(unit)
        idents = {name: frozenset(_IDENTIFIER.findall(text)) for name, text in texts.items()}
        aliases = {local for local, target in facts.aliases.items() if target.rsplit(".", 1)[-1] == "backward"}
        self._steppers = _spreading(texts, idents, ("step", NATIVE_SCALER), set())
        self._backwards = _spreading(texts, idents, ("backward", NATIVE_SCALER), aliases)

    def _text(self, unit: Unit) -> str:
        return "".join(self._lines[unit.start_line - 1 : unit.end_line])

    def could_form_loop(self, unit: Unit) -> bool:
        """Whether ``unit`` may hold a loop with a step and a backward call, its own or a helper's."""
        body = self._text(unit)
        if NATIVE_SCALER in body:
            return True
        names = frozenset(_IDENTIFIER.findall(body))
        return ("step" in body or bool(names & self._steppers)) and ("backward" in body or bool(names & self._backwards))


_IDENTIFIER = re.compile(r"\w+")


def _spreading(texts: dict[str, str], idents: dict[str, frozenset[str]], words: tuple[str, ...],
               seed: set[str]) -> frozenset[str]:
    """Names whose call may bring one of ``words`` along: the seed, the functions whose text
    holds a word, then the functions that name one of those, until nothing changes."""
    found = seed | {name for name, text in texts.items() if any(word in text for word in words)}
    changed = True
    while changed:
        grown = {name for name, names in idents.items() if name not in found and names & found}
        found |= grown
        changed = bool(grown)
    return frozenset(found)


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
