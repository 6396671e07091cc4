"""Fuzzing machinery shared by the reliability tests and ``scripts/fuzz.py``.

Three sources of programs, all hypothesis strategies (so failures shrink):

- :func:`valid_programs`: hypothesmith's programs from Python's grammar (they compile);
- :func:`grafted_programs`: those programs with training calls (``loss.backward()``,
  ``optimizer.step()``, clips, ``zero_grad``) grafted in at random lines, so that the loop
  model and the rules run on them, not only the screen;
- :func:`mutated_scripts`: the realistic training scripts of ``fixtures/`` with lines
  shuffled, deleted, duplicated and moved, indentation broken, text truncated, tokens dropped.

:func:`check_program` states what must hold for any text: the core never raises, GL000 is
reported exactly when the running Python rejects the text (and the text filter lets it in),
every diagnostic is well formed, and the fixer never raises, never returns text that does
not parse, keeps the statements and comments it does not move, and is idempotent
(``tests/fixsafety.py``).
"""

from __future__ import annotations

import ast
import json
import warnings
from functools import lru_cache
from pathlib import Path

import hypothesmith
from fixsafety import check_fix_safety
from hypothesis import strategies as st

from gradlint.diagnostics import Diagnostic
from gradlint.engine import lint_bytes, lint_source
from gradlint.catalogue import CATALOGUE, SYNTAX_ERROR
from gradlint.prefilter import might_hold_training_loop
from gradlint.settings import Settings
from gradlint.source import python_lines

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
EVERY_RULE = Settings(select=frozenset(CATALOGUE))
"""Every rule of the catalogue, GL900 (unused suppression) included."""

TRAINING_CALLS = (
    "loss.backward()",
    "optimizer.step()",
    "optimizer.zero_grad()",
    "scheduler.step()",
    "scaler.scale(loss).backward()",
    "scaler.step(optimizer)",
    "scaler.update()",
    "torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)",
    "loss = model(x) / accum",
    "if (i + 1) % accum == 0:",
    "for i, x in enumerate(loader):",
    "with accelerator.accumulate(model):",
    "accelerator.backward(loss)",
    "optimizer.zero_grad()  # noqa: GL103",
)


def rejects(text: str, path: str = "fuzz.py") -> str | None:
    """Why the running Python rejects ``text`` (its own parser, as ``compile`` runs it), or None."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(text, path, "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)
    except SyntaxError as exc:
        return f"SyntaxError: {exc.msg}"
    except (ValueError, RecursionError, MemoryError) as exc:
        return f"{exc.__class__.__name__}: {exc}"
    return None


def check_diagnostics(diagnostics: list[Diagnostic], text: str, path: str) -> None:
    """Diagnostics are sorted, of catalogued codes, on lines of ``text``, and serialisable."""
    assert diagnostics == sorted(diagnostics, key=Diagnostic.sort_key)
    last_line = len(python_lines(text))
    for diagnostic in diagnostics:
        span = diagnostic.span
        assert diagnostic.code in CATALOGUE, diagnostic
        assert diagnostic.path == path
        assert 1 <= span.line <= span.end_line <= last_line, diagnostic
        assert span.column >= 1 and span.end_column >= 1, diagnostic
        assert span.end_line > span.line or span.end_column >= span.column, diagnostic
        json.dumps(diagnostic.to_dict())


def check_program(text: str, path: str = "fuzz.py", *, fix: bool = True) -> None:
    """Everything that must hold for any ``text``; an AssertionError or any other exception
    is a bug (the one exception to that is a bug in Python itself, not expected)."""
    rejected = rejects(text, path)
    for full in (False, True):
        diagnostics = lint_source(text, path, EVERY_RULE, full=full)
        check_diagnostics(diagnostics, text, path)
        gl000 = [d for d in diagnostics if d.code == SYNTAX_ERROR.code]
        screened = full or might_hold_training_loop(text)
        assert len(gl000) == (1 if rejected and screened else 0), (rejected, gl000)
        if rejected:
            assert diagnostics == gl000
    data = text.encode("utf-8", "surrogatepass")
    from_bytes = lint_bytes(data, path, EVERY_RULE, full=True)
    check_diagnostics(from_bytes, text, path)
    if _plain_utf8(text):
        assert from_bytes == lint_source(text, path, EVERY_RULE, full=True)
    if fix:
        check = check_fix_safety(text, path, EVERY_RULE)
        if rejected:
            assert check.result.text == text and not check.result.fixed
        else:
            assert rejects(check.result.text, path) is None, check.result.text
            assert [p for p in check.problems if " fix reverted: " not in p] == []  # a revert is handled


def _plain_utf8(text: str) -> bool:
    """Whether Python reads ``text``'s UTF-8 bytes back as ``text`` (no NUL, surrogate, BOM
    or coding cookie in the way)."""
    if "\x00" in text or text.startswith("\ufeff") or "coding" in text:
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


# -- strategies ------------------------------------------------------------------------------


@lru_cache(maxsize=1)
def fixture_scripts() -> tuple[tuple[str, str], ...]:
    """(name, text) of every realistic training script in ``fixtures/``."""
    return tuple((str(p.relative_to(ROOT)), p.read_text(encoding="utf-8"))
                 for p in sorted(FIXTURES.rglob("*.py")))


@lru_cache(maxsize=1)
def valid_programs() -> st.SearchStrategy[str]:
    """Programs hypothesmith derives from Python's grammar (they compile); built once (building
    the grammar is slow)."""
    return hypothesmith.from_grammar()


@st.composite
def grafted_programs(draw: st.DrawFn) -> str:
    """A valid program with a few training statements grafted in, each with the indentation
    of the line it is put before (the result may or may not parse)."""
    lines = draw(valid_programs()).splitlines(keepends=True) or [""]
    for _ in range(draw(st.integers(1, 6))):
        at = draw(st.integers(0, len(lines)))
        neighbour = lines[at] if at < len(lines) else (lines[-1] if lines else "")
        indent = neighbour[: len(neighbour) - len(neighbour.lstrip(" \t"))]
        statement = draw(st.sampled_from(TRAINING_CALLS))
        body = f"{indent}    pass\n" if statement.endswith(":") else ""
        lines.insert(at, f"{indent}{statement}\n{body}")
    return "".join(lines)


def _span(draw: st.DrawFn, size: int) -> tuple[int, int]:
    start = draw(st.integers(0, max(size - 1, 0)))
    return start, draw(st.integers(start, min(size, start + 8)))


def _delete(draw: st.DrawFn, lines: list[str]) -> list[str]:
    start, end = _span(draw, len(lines))
    return lines[:start] + lines[end:]


def _duplicate(draw: st.DrawFn, lines: list[str]) -> list[str]:
    start, end = _span(draw, len(lines))
    at = draw(st.integers(0, len(lines)))
    return lines[:at] + lines[start:end] + lines[at:]


def _move(draw: st.DrawFn, lines: list[str]) -> list[str]:
    start, end = _span(draw, len(lines))
    block, rest = lines[start:end], lines[:start] + lines[end:]
    at = draw(st.integers(0, len(rest)))
    return rest[:at] + block + rest[at:]


def _shuffle(draw: st.DrawFn, lines: list[str]) -> list[str]:
    start, end = _span(draw, len(lines))
    return lines[:start] + draw(st.permutations(lines[start:end])) + lines[end:]


def _reindent(draw: st.DrawFn, lines: list[str]) -> list[str]:
    start, end = _span(draw, len(lines))
    change = draw(st.sampled_from(["+1", "+4", "-1", "-4", "tab", "untab", "flush"]))
    out = list(lines)
    for index in range(start, end):
        line = out[index]
        if change.startswith("+"):
            line = " " * int(change[1:]) + line
        elif change.startswith("-"):
            cut = min(int(change[1:]), len(line) - len(line.lstrip(" ")))
            line = line[cut:]
        elif change == "tab":
            line = line.replace("    ", "\t", 1)
        elif change == "untab":
            line = line.replace("\t", "  ")
        else:
            line = line.lstrip(" \t")
        out[index] = line
    return out


def _truncate(draw: st.DrawFn, lines: list[str]) -> list[str]:
    text = "".join(lines)
    return [text[: draw(st.integers(0, len(text)))]]


def _drop_token(draw: st.DrawFn, lines: list[str]) -> list[str]:
    """Remove or swap one structural character (colon, bracket, quote, operator)."""
    text = "".join(lines)
    positions = [i for i, c in enumerate(text) if c in ":()[]{}'\",=.+/"]
    if not positions:
        return lines
    at = draw(st.sampled_from(positions))
    replacement = draw(st.sampled_from(["", "(", ")", ":", "'", '"""', "\\", " ", "\n", "#"]))
    return [text[:at] + replacement + text[at + 1:]]


def _splice(draw: st.DrawFn, lines: list[str]) -> list[str]:
    """Insert a few lines of another training script."""
    _, other = draw(st.sampled_from(fixture_scripts()))
    donor = other.splitlines(keepends=True)
    start, end = _span(draw, len(donor))
    at = draw(st.integers(0, len(lines)))
    return lines[:at] + donor[start:end] + lines[at:]


def _line_endings(draw: st.DrawFn, lines: list[str]) -> list[str]:
    ending = draw(st.sampled_from(["\r\n", "\r", "\n"]))
    start, end = _span(draw, len(lines))
    return lines[:start] + [line.rstrip("\r\n") + ending for line in lines[start:end]] + lines[end:]


MUTATIONS = (_delete, _duplicate, _move, _shuffle, _reindent, _truncate, _drop_token, _splice, _line_endings)


@st.composite
def mutated_scripts(draw: st.DrawFn) -> str:
    """A fixture training script after one to four random mutations."""
    _, text = draw(st.sampled_from(fixture_scripts()))
    lines = text.splitlines(keepends=True)
    for _ in range(draw(st.integers(1, 4))):
        mutation = draw(st.sampled_from(MUTATIONS))
        lines = mutation(draw, lines)
        lines = "".join(lines).splitlines(keepends=True)
    return "".join(lines)
