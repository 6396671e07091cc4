"""Suppression comments: ``# noqa``, ``# gradlint: ignore[...]``, file-level ``# gradlint: noqa``.

Applied by the core after the rules run, so the command line, the cache and the language
server agree. Comments are found with :mod:`tokenize` (a ``# noqa`` inside a string is not a
comment). Only gradlint codes (``GLnnn``) count: ``# noqa: E501`` belongs to another tool, and
a bare ``# noqa`` may too, so neither is ever reported as unused. ``GL900`` reports the other
suppressions that suppress nothing (without a fix: a stale comment and a comment on the wrong
line call for opposite edits).
"""

from __future__ import annotations

import io
import re
import tokenize
from collections.abc import Iterator
from dataclasses import dataclass, field

from gradlint.catalogue import CATALOGUE, SYNTAX_ERROR, UNUSED_SUPPRESSION
from gradlint.diagnostics import Diagnostic, Span
from gradlint.settings import Settings

_CODE = r"[A-Za-z]+[0-9]+"
NOQA = re.compile(rf"#\s*noqa(?::[ \t]*(?P<codes>{_CODE}(?:[ \t]*,?[ \t]*{_CODE})*))?", re.IGNORECASE)
IGNORE = re.compile(r"#\s*gradlint:\s*ignore(?:\[(?P<codes>[^\]]*)\])?", re.IGNORECASE)
FILE_NOQA = re.compile(rf"#\s*gradlint:\s*noqa(?::[ \t]*(?P<codes>{_CODE}(?:[ \t]*,?[ \t]*{_CODE})*))?\s*$",
                       re.IGNORECASE)
CODE = re.compile(_CODE)


def _is_ours(code: str) -> bool:
    return code.upper().startswith("GL")


@dataclass
class Directive:
    """One suppression comment: where it is, what it names, what it suppressed."""

    kind: str  # "noqa", "ignore" or "file"
    span: Span  # the directive's text (reported by GL900)
    text: str
    codes: tuple[str, ...] | None  # gradlint codes named; None: a blanket directive
    used: set[str] = field(default_factory=set)

    def covers(self, code: str) -> bool:
        """Whether this directive suppresses ``code``."""
        return self.codes is None or code in self.codes


def _codes(text: str | None) -> tuple[tuple[str, ...] | None, bool]:
    """The gradlint codes in ``text`` (None when there is no code list), and whether it
    also names other tools' codes."""
    if text is None:
        return None, False
    found = [c.upper() for c in CODE.findall(text)]
    ours = tuple(dict.fromkeys(c for c in found if _is_ours(c)))
    return ours, len(ours) < len(found)


def _comments(source: str) -> Iterator[tuple[tokenize.TokenInfo, bool]]:
    """Comment tokens, and whether each is alone on its line."""
    for token in tokenize.generate_tokens(io.StringIO(source, newline=None).readline):  # Python lines
        if token.type == tokenize.COMMENT:
            yield token, not token.line[: token.start[1]].strip()


def find_directives(source: str) -> list[Directive]:
    """Every suppression comment of ``source`` (empty when it cannot be tokenized)."""
    found: list[Directive] = []
    try:
        for token, own_line in _comments(source):
            found.extend(_parse(token, own_line))
    except (tokenize.TokenError, SyntaxError):
        return []
    return found


def _parse(token: tokenize.TokenInfo, own_line: bool) -> Iterator[Directive]:
    line, start = token.start
    text = token.string
    whole = FILE_NOQA.fullmatch(text.rstrip())
    if whole and own_line:
        codes, _ = _codes(whole.group("codes"))
        span = Span(line, start + 1, line, start + 1 + len(text.rstrip()))
        yield Directive("file", span, whole.group(), codes)
        return
    for kind, pattern in (("noqa", NOQA), ("ignore", IGNORE)):
        for match in pattern.finditer(text):
            codes, foreign = _codes(match.group("codes"))
            if codes == () and foreign:
                continue  # only another tool's codes: not ours
            if codes == ():
                codes = None  # ``ignore[]`` names nothing: a blanket ignore
            span = Span(line, start + 1 + match.start(), line, start + 1 + match.end())
            yield Directive(kind, span, match.group(), codes)


def apply_suppressions(diagnostics: list[Diagnostic], source: str, path: str,
                       settings: Settings) -> list[Diagnostic]:
    """Drop suppressed diagnostics; add GL900 for unused suppressions when it is enabled.

    A syntax error (GL000) is never suppressed. The result is sorted. The caller asks the
    text test (:func:`gradlint.prefilter.might_hold_suppression`) first: without a hint of a
    suppression comment there is nothing to tokenize.
    """
    if any(d.code == SYNTAX_ERROR.code for d in diagnostics):
        return diagnostics
    directives = find_directives(source)
    if not directives:
        return diagnostics
    by_line: dict[int, list[Directive]] = {}
    for directive in directives:
        if directive.kind != "file":
            by_line.setdefault(directive.span.line, []).append(directive)
    file_level = [d for d in directives if d.kind == "file"]
    kept: list[Diagnostic] = []
    for diagnostic in diagnostics:
        hits = [d for d in (*by_line.get(diagnostic.line, ()), *file_level) if d.covers(diagnostic.code)]
        for directive in hits:
            directive.used.add(diagnostic.code)
        if not hits:
            kept.append(diagnostic)
    if settings.enabled(UNUSED_SUPPRESSION.code):
        kept.extend(_unused(directives, path, settings))
    return sorted(kept, key=Diagnostic.sort_key)


def _unused(directives: list[Directive], path: str, settings: Settings) -> Iterator[Diagnostic]:
    info = UNUSED_SUPPRESSION
    for directive in directives:
        if directive.codes is None:
            if directive.used or directive.kind == "noqa":
                continue  # a bare noqa comment may serve another tool
            message = f"unused blanket suppression `{directive.text}`"
            yield Diagnostic(path, directive.span, info.code, info.name, info.severity, message)
            continue
        unused = [c for c in directive.codes if c not in directive.used]
        if not unused:
            continue
        reasons = [f"{c} ({_reason(c, settings)})" if _reason(c, settings) else c for c in unused]
        message = f"unused suppression for {', '.join(reasons)}"
        yield Diagnostic(path, directive.span, info.code, info.name, info.severity, message)


def _reason(code: str, settings: Settings) -> str:
    if code not in CATALOGUE:
        return "unknown code"
    if not settings.enabled(code):
        return "not enabled"
    return ""
