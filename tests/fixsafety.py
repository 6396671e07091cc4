"""What every application of the fixes must respect, as a function that lists the violations
(shared by ``tests/test_reliability_fix.py`` and ``benchmarks/corpus_check.py``).

With every fix applied (unsafe ones included), the result parses, is a fixpoint, keeps
every statement and comment the fixes did not touch, and changes the training calls only by
moving a finding's call to the boundary with its conditions, removing a duplicate or
inserting a guarded ``unscale_`` (``tests/fixcalls.py``). A fix may move a statement (same text,
new place), wrap it (a new ``if`` header), rewrite it in place (``loss.backward()`` becomes
``(loss / N).backward()``: a statement of the same kind with the same anchor, its assignment
target or called method) or, for a "Remove ..." fix, delete the statements it names with
their comments (and the compound statement around one when that held nothing else).
"""

from __future__ import annotations

import ast
import copy
import io
import tokenize
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from fixcalls import call_violations

from gradlint.fixer import FixResult, fix_source
from gradlint.settings import Settings

_BODIES = ("body", "orelse", "finalbody", "handlers", "cases")


@dataclass
class FixCheck:
    """The fix result of one text and every violation found (empty: all is well)."""

    result: FixResult
    problems: list[str] = field(default_factory=list)


def check_fix_safety(source: str, path: str, settings: Settings,
                     fix: Callable[..., FixResult] = fix_source) -> FixCheck:
    """Apply every fix of ``source`` (unsafe ones included) and check the result; ``fix``
    is ``fix_source`` or a memoized stand-in with its signature."""
    result = fix(source, path, settings, unsafe=True)
    check = FixCheck(result, violations(source, result))
    if result.fixed and not check.problems:
        again = fix(result.text, path, settings, unsafe=True)
        if again.text != result.text or again.fixed:
            check.problems.append(f"not idempotent: a second run fixed {[d.code for d in again.fixed]}")
    return check


def violations(source: str, result: FixResult) -> list[str]:
    """What ``result`` (the fixes of ``source``) breaks: parsing, statements, comments."""
    if not result.fixed:
        return [] if result.text == source else ["the text changed although nothing was fixed"]
    try:
        after = ast.parse(result.text)
    except SyntaxError as exc:
        return [f"the fixed text does not parse: {exc.msg} (line {exc.lineno})"]
    problems = [f"{r.diagnostic.code} fix reverted: {r.error}" for r in result.reverted]
    problems += call_violations(ast.parse(source), after)
    removals = sum(_removed(d.fix.message) for d in result.fixed if d.fix is not None)
    lost, added = _difference(ast.parse(source), after)
    unexplained = Counter(_anchor(s) for s in _removed_content(lost)) - Counter(_anchor(s) for s in added)
    if sum(unexplained.values()) > removals:
        problems.append(f"statements lost: {sorted(ast.unparse(s) for s in lost)} "
                        f"({removals} removal fix(es) applied)")
    # which of two identical statements went is not known: a comment on any statement with the
    # header of a lost one may have gone with it (a deduplicated step's trailing comment)
    gone = {_header(s) for s in lost}
    lost_lines = {line for s in _statements(ast.parse(source)) if _header(s) in gone
                  for line in range(s.lineno, (s.end_lineno or s.lineno) + 1)}
    dropped = Counter(text for _, text in _comments(source)) - Counter(text for _, text in _comments(result.text))
    for line, text in _comments(source):
        if dropped[text] and line not in lost_lines:
            problems.append(f"comment lost: line {line}: {text}")
            dropped[text] -= 1
    return problems


def _removed(message: str) -> int:
    """How many statements a fix says it removes: each quoted call of a "Remove ..." message
    before its colon ("Remove `scaler.step()` and `scaler.update()`: ..." removes two)."""
    if not message.startswith("Remove"):
        return 0
    return max(1, message.split(":", 1)[0].count("`") // 2)


def _header(node: ast.stmt) -> str:
    """A statement's text without the statements it holds (all of it for a simple one)."""
    shell = copy.copy(node)
    for name in _BODIES:
        if hasattr(shell, name):
            setattr(shell, name, [])
    return ast.unparse(shell)


def _statements(tree: ast.Module) -> list[ast.stmt]:
    return [node for node in ast.walk(tree) if isinstance(node, ast.stmt)]


def _difference(before: ast.Module, after: ast.Module) -> tuple[list[ast.stmt], list[ast.stmt]]:
    """Statements of ``before`` missing from ``after`` (by header), and the new ones."""
    old, new = _statements(before), _statements(after)
    missing = Counter(_header(s) for s in old) - Counter(_header(s) for s in new)
    extra = Counter(_header(s) for s in new) - Counter(_header(s) for s in old)
    return _take(old, missing), _take(new, extra)


def _removed_content(lost: list[ast.stmt]) -> list[ast.stmt]:
    """``lost`` without the compound statements that went with everything they held: a
    removal fix deletes ``if args.clip: clip(...)`` whole when the call is all it holds."""
    gone = Counter(_header(s) for s in lost)
    return [s for s in lost if not (_inner(s) and not Counter(_header(i) for i in _inner(s)) - gone)]


def _inner(statement: ast.stmt) -> list[ast.stmt]:
    return [node for node in ast.walk(statement) if isinstance(node, ast.stmt) and node is not statement]


def _take(statements: list[ast.stmt], wanted: Counter) -> list[ast.stmt]:
    taken = []
    for statement in statements:
        key = _header(statement)
        if wanted[key]:
            wanted[key] -= 1
            taken.append(statement)
    return taken


def _anchor(statement: ast.stmt) -> str:
    """What a statement rewritten in place keeps: its kind and its target or called name."""
    kind = type(statement).__name__
    if isinstance(statement, ast.Assign):
        return f"{kind} {[ast.unparse(t) for t in statement.targets]}"
    if isinstance(statement, (ast.AugAssign, ast.AnnAssign)):
        return f"{kind} {ast.unparse(statement.target)}"
    if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call):
        func = statement.value.func
        return f"{kind} {func.attr if isinstance(func, ast.Attribute) else ast.unparse(func)}"
    if isinstance(statement, ast.Return):
        return kind  # a returned value rewritten in place (GL206's clamp) is still the return
    return f"{kind} {_header(statement)}"


def _comments(text: str) -> list[tuple[int, str]]:
    """(line, text) of every comment."""
    found = []
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.COMMENT:
                found.append((token.start[0], token.string.strip()))
    except (tokenize.TokenError, SyntaxError):
        pass
    return found
