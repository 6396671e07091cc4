"""Apply fixes like ruff: non-overlapping edits, re-lint, repeat to a fixpoint.

:func:`fix_source` is pure (text in, text and diagnostics out) and is what the CLI, the
language server and stdin mode call. :func:`fix_file` adds the file around it: decoding
as Python does, re-encoding with the same encoding and BOM, and an atomic write that keeps
the file's permissions. A pass whose result does not parse is reverted and reported.
"""

from __future__ import annotations

import ast
import codecs
import os
import stat
import tempfile
from collections.abc import Iterable
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path

from gradlint.budget import AnalysisTimeout, time_budget
from gradlint.diagnostics import Applicability, Diagnostic, Edit, Fix
from gradlint.settings import Settings
from gradlint.source import SourceError, decode, encode, python_lines, read_source_file

MAX_PASSES = 10


@dataclass(frozen=True)
class Reverted:
    """A fix that was applied, left code that does not parse, and was taken back."""

    diagnostic: Diagnostic
    error: str


@dataclass
class FixResult:
    """The fixed text, the diagnostics fixed on the way, what remains, what was reverted."""

    text: str
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
    result = FixResult(text)
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
    new = apply_fixes(text, [d.fix for d in chosen])
    if syntax_error(new, path) is None:
        return new, chosen
    good = []
    for diagnostic in chosen:
        error = syntax_error(apply_fixes(text, [diagnostic.fix]), path)
        if error is None:
            good.append(diagnostic)
        else:
            result.reverted.append(Reverted(diagnostic, error))
            rejected.add(_key(diagnostic))
    if not good:
        return None, []
    new = apply_fixes(text, [d.fix for d in good])
    if syntax_error(new, path) is not None:
        good = good[:1]
        new = apply_fixes(text, [good[0].fix])
    return new, good


def _key(diagnostic: Diagnostic) -> tuple:
    """Identity of a fix across passes (positions shift, the rewrite does not)."""
    fix = diagnostic.fix
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
        ranges = _ranges(offsets, diagnostic.fix)
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
    the file's line ending."""
    offsets = _Offsets(text)
    newline = newline_of(text)
    edits: list[tuple[int, int, str]] = []
    for fix in fixes:
        for edit in fix.edits:
            start = offsets(edit.span.line, edit.span.column)
            end = offsets(edit.span.end_line, edit.span.end_column)
            edits.append((start, end, _with_newline(edit, newline)))
    for start, end, content in sorted(edits, reverse=True):
        if content and start == len(text) and text and not text.endswith(("\n", "\r")):
            # after a last line without a line ending: the file keeps ending without one
            content = newline + (content[: -len(newline)] if content.endswith(newline) else content)
        text = text[:start] + content + text[end:]
    return text


def _with_newline(edit: Edit, newline: str) -> str:
    content = edit.content.replace("\r\n", "\n")
    return content.replace("\n", newline) if newline != "\n" else content


@dataclass
class FileFix:
    """What fixing one file did: its text before and after, the diagnostics fixed and
    remaining, fixes reverted, and why it was left unchanged (if it was)."""

    path: Path
    display: str
    before: str = ""
    after: str = ""
    fixed: list[Diagnostic] = field(default_factory=list)
    remaining: list[Diagnostic] = field(default_factory=list)
    reverted: list[Reverted] = field(default_factory=list)
    error: str | None = None

    @property
    def changed(self) -> bool:
        return self.error is None and self.after != self.before


def fix_file(path: Path, display: str, settings: Settings, unsafe: bool, write: bool,
             timeout: float = 0) -> FileFix:
    """Fix one file (a notebook's code cells too); with ``write``, replace it atomically.
    Unreadable, undecodable or unwritable files keep their bytes and report every
    diagnostic as remaining. A file whose analysis takes more than ``timeout`` CPU seconds
    (0: no limit) is left as it is, with nothing reported but the error."""
    outcome = FileFix(path, display)
    try:
        data = read_source_file(path)
    except OSError:
        return _lint_only(outcome, settings)
    try:
        with time_budget(timeout):
            if path.suffix == ".ipynb":
                fixed = _fix_notebook(outcome, data, settings, unsafe)
            else:
                fixed = _fix_python(outcome, data, settings, unsafe)
    except AnalysisTimeout as exc:
        outcome.error = f"not fixed: {exc}"
        outcome.after, outcome.fixed, outcome.remaining, outcome.reverted = outcome.before, [], [], []
        return outcome
    if fixed is None or not outcome.changed:
        return outcome
    if write:
        try:
            write_atomic(path, fixed, expected=data)
        except OSError as exc:
            return _unchanged(outcome, settings, exc.strerror or str(exc))
    return outcome


def _fix_python(outcome: FileFix, data: bytes, settings: Settings, unsafe: bool) -> bytes | None:
    from gradlint.engine import lint_bytes

    try:
        decoded = decode(data)
    except SourceError:
        outcome.remaining = lint_bytes(data, outcome.display, settings)
        return None
    result = fix_source(decoded.text, outcome.display, settings, unsafe)
    outcome.before, outcome.after = decoded.text, result.text
    outcome.fixed, outcome.remaining, outcome.reverted = result.fixed, result.remaining, result.reverted
    if not outcome.changed:
        return None
    try:
        return encode(decoded, result.text)
    except UnicodeEncodeError:
        _unchanged(outcome, settings, f"the fixed text cannot be encoded as {decoded.encoding}")
        return None


def _fix_notebook(outcome: FileFix, data: bytes, settings: Settings, unsafe: bool) -> bytes | None:
    from gradlint.notebook import NotebookError, fix_notebook

    bom = codecs.BOM_UTF8 if data.startswith(codecs.BOM_UTF8) else b""
    try:
        raw = data[len(bom):].decode("utf-8")
        result = fix_notebook(raw, outcome.display, settings, unsafe)
    except (UnicodeDecodeError, NotebookError):
        _lint_only(outcome, settings)
        return None
    outcome.before, outcome.after = raw, result.text
    outcome.fixed, outcome.remaining = result.fixed, result.remaining
    if result.error is not None:
        _unchanged(outcome, settings, result.error)
        return None
    return bom + result.text.encode("utf-8") if outcome.changed else None


def _lint_only(outcome: FileFix, settings: Settings) -> FileFix:
    from gradlint.runner import lint_file

    outcome.remaining = lint_file(outcome.path, settings)
    return outcome


def _unchanged(outcome: FileFix, settings: Settings, reason: str) -> FileFix:
    outcome.error = f"not fixed: {reason}"
    outcome.after, outcome.fixed = outcome.before, []
    return _lint_only(outcome, settings)


def write_atomic(path: Path, data: bytes, expected: bytes | None = None) -> None:
    """Replace ``path`` with ``data`` through a temporary file in the same folder (fsync,
    then rename), keeping its permissions. Refuses a read-only file and, with
    ``expected``, a file that changed since it was read."""
    target = Path(os.path.realpath(path))
    info = target.stat()
    writable = info.st_mode & (stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH)
    if not writable or not os.access(target, os.W_OK):
        raise PermissionError(13, "file is read-only", str(path))
    if expected is not None and target.read_bytes() != expected:
        raise OSError(0, "file changed while it was being fixed", str(path))
    fd, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".gradlint-tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temporary, stat.S_IMODE(info.st_mode))
        os.replace(temporary, target)
    except BaseException:
        with suppress(OSError):
            os.unlink(temporary)
        raise
    _sync_folder(target.parent)


def _sync_folder(folder: Path) -> None:
    """Make the rename durable where the platform allows it."""
    with suppress(OSError, AttributeError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
