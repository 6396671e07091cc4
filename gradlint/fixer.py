"""Apply fixes like ruff: non-overlapping edits, re-lint, repeat to a fixpoint.

:func:`fix_source` is pure (text in, text and diagnostics out); a pass whose result does
not parse is reverted and reported. Files (decoding, notebooks, the atomic write) are the
runner's side: :mod:`gradlint.writer`.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from dataclasses import dataclass, field

from gradlint.diagnostics import Applicability, Diagnostic, Edit, Fix
from gradlint.settings import Settings
from gradlint.source import python_lines

MAX_PASSES = 10


@dataclass(frozen=True)
class Reverted:
    """A fix that was applied, left code that does not parse, and was taken back."""

    diagnostic: Diagnostic
    error: str


@dataclass
class FixResult:
    """The fixed text, the diagnostics fixed on the way, what remains, what was reverted, and
    the diagnostics of the text before any fix (``initial``)."""

    text: str
    initial: list[Diagnostic] = field(default_factory=list)
    fixed: list[Diagnostic] = field(default_factory=list)
    remaining: list[Diagnostic] = field(default_factory=list)
    reverted: list[Reverted] = field(default_factory=list)


def applicable(fix: Fix | None, unsafe: bool) -> bool:
    """Whether ``fix`` is applied: safe ones always, unsafe ones on request."""
    if fix is None or not fix.edits:
        return False
    return fix.applicability is Applicability.SAFE or (unsafe and fix.applicability is Applicability.UNSAFE)


def fix_source(source: str, path: str, settings: Settings, unsafe: bool = False) -> FixResult:
    """Apply every applicable fix of ``source`` until nothing changes (at most ``MAX_PASSES``)."""
    # The analysis (and libcst) loads on use: reports import this module for applicable().
    from gradlint.engine import lint_source

    text, diagnostics = source, lint_source(source, path, settings)
    result = FixResult(text, initial=diagnostics)
    rejected: set[tuple] = set()
    seen = {text}
    for _ in range(MAX_PASSES):
        candidates = [d for d in diagnostics if applicable(d.fix, unsafe) and _key(d) not in rejected]
        chosen = _non_overlapping(text, candidates)
        if not chosen:
            break
        new, chosen = _apply_parsing(text, path, chosen, result, rejected)
        if new is None:
            continue
        if new in seen:
            break  # fixes that undo each other: stop where we are
        seen.add(new)
        result.fixed.extend(chosen)
        text, diagnostics = new, lint_source(new, path, settings)
    result.text, result.remaining = text, diagnostics
    return result


def _apply_parsing(
    text: str, path: str, chosen: list[Diagnostic], result: FixResult, rejected: set[tuple]
) -> tuple[str | None, list[Diagnostic]]:
    """Apply ``chosen`` together; if that does not parse, find the fixes that break the
    code on their own, revert and report them, and apply the rest."""
    new = apply_fixes(text, [_fix(d) for d in chosen])
    if syntax_error(new, path) is None:
        return new, chosen
    good = []
    for diagnostic in chosen:
        error = syntax_error(apply_fixes(text, [_fix(diagnostic)]), path)
        if error is None:
            good.append(diagnostic)
        else:
            result.reverted.append(Reverted(diagnostic, error))
            rejected.add(_key(diagnostic))
    if not good:
        return None, []
    new = apply_fixes(text, [_fix(d) for d in good])
    if syntax_error(new, path) is not None:
        good = good[:1]
        new = apply_fixes(text, [_fix(good[0])])
    return new, good


def _fix(diagnostic: Diagnostic) -> Fix:
    """The fix of a diagnostic that :func:`applicable` chose (it has one)."""
    assert diagnostic.fix is not None
    return diagnostic.fix


def _key(diagnostic: Diagnostic) -> tuple:
    """Identity of a fix across passes (positions shift, the rewrite does not)."""
    fix = _fix(diagnostic)
    return (diagnostic.code, diagnostic.message, fix.message, tuple(e.content for e in fix.edits))


def syntax_error(text: str, path: str) -> str | None:
    """Why ``text`` is not valid Python, or None."""
    try:
        compile(text, path, "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)
    except SyntaxError as exc:
        return f"{exc.msg} (line {exc.lineno})"
    except (ValueError, RecursionError, MemoryError) as exc:
        return str(exc) or exc.__class__.__name__
    return None


class _Offsets:
    """Convert 1-based (line, column) to offsets in ``text``; lines are numbered as Python
    numbers them, like diagnostics (a lone ``\\r`` ends a line too)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.starts = [0]
        for line in python_lines(text)[:-1]:
            self.starts.append(self.starts[-1] + len(line))

    def __call__(self, line: int, column: int) -> int:
        if line > len(self.starts):
            return len(self.text)
        start = self.starts[line - 1]
        end = self.starts[line] if line < len(self.starts) else len(self.text)
        return min(start + column - 1, end)


def newline_of(text: str) -> str:
    """The file's line ending: that of its first line (``\\n`` when it has none)."""
    index = text.find("\n")
    if index > 0 and text[index - 1] == "\r":
        return "\r\n"
    return "\n"


def _ranges(offsets: _Offsets, fix: Fix) -> list[tuple[int, int]]:
    return sorted((offsets(e.span.line, e.span.column), offsets(e.span.end_line, e.span.end_column)) for e in fix.edits)


def _conflict(a: tuple[int, int], b: tuple[int, int]) -> bool:
    """Edits that overlap or touch (two insertions at one point included)."""
    return a[0] <= b[1] and b[0] <= a[1]


def _non_overlapping(text: str, candidates: list[Diagnostic]) -> list[Diagnostic]:
    """Fixes in report order, skipping any whose edits touch an edit already chosen."""
    offsets = _Offsets(text)
    taken: list[tuple[int, int]] = []
    chosen = []
    for diagnostic in candidates:
        ranges = _ranges(offsets, _fix(diagnostic))
        inner = any(_overlapping(a, b) for a, b in zip(ranges, ranges[1:], strict=False))
        if inner or any(_conflict(r, t) for r in ranges for t in taken):
            continue
        taken.extend(ranges)
        chosen.append(diagnostic)
    return chosen


def _overlapping(a: tuple[int, int], b: tuple[int, int]) -> bool:
    return a[1] > b[0] or (a[0] == a[1] == b[0] == b[1])


def apply_fixes(text: str, fixes: Iterable[Fix]) -> str:
    """``text`` with the edits of ``fixes`` (non-overlapping) applied; inserted text gets
    the line ending of the line it lands in (in a file of mixed endings, its new
    neighbours')."""
    offsets = _Offsets(text)
    default = newline_of(text)
    edits: list[tuple[int, int, str, str]] = []
    for fix in fixes:
        for edit in fix.edits:
            start = offsets(edit.span.line, edit.span.column)
            end = offsets(edit.span.end_line, edit.span.end_column)
            newline = _newline_at(text, start, default)
            edits.append((start, end, _with_newline(edit, newline), newline))
    for start, end, content, newline in sorted(edits, reverse=True):
        if content and start == len(text) and text and not text.endswith(("\n", "\r")):
            # after a last line without a line ending: the file keeps ending without one
            content = newline + (content[: -len(newline)] if content.endswith(newline) else content)
        text = text[:start] + content + text[end:]
    return text


def _newline_at(text: str, offset: int, default: str) -> str:
    """The line ending of the line holding ``offset`` (of the line before, on a last line
    without one; ``default`` in a file of one line)."""
    end = text.find("\n", offset)
    if end == -1:
        end = text.rfind("\n", 0, offset)
        if end == -1:
            return default
    return "\r\n" if end > 0 and text[end - 1] == "\r" else "\n"


def _with_newline(edit: Edit, newline: str) -> str:
    content = edit.content.replace("\r\n", "\n")
    return content.replace("\n", newline) if newline != "\n" else content
