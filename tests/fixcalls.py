"""What a fix may do to the training calls of a file (issue 18, point 1), for ``fixsafety``.

Each training call (``backward``, ``step``, ``zero_grad``, a clip, ``unscale_``, a scaler's
``update``) is read with its *chain*: the enclosing functions, conditions (with the branch)
and loops, outermost first. Before and after the fixes, per call:

- a call that moved keeps every condition and loop it had below the place both chains
  share (a guard moves with it); it may gain the boundary's gate, and it may leave only a
  loop that still runs a backward (the micro-batch loop it moved out of);
- no new copy of a call lands where the same call already was (a duplicate at the boundary);
- a call is removed only when a copy of it remains, and only if it ran unconditionally
  below the place it shares with that copy;
- an inserted ``unscale_`` stands under every condition that all the scaler's other calls
  share (``if scaler is not None:``);
- a backward's loss is not divided by a divisor it was already divided by (``loss /= N``,
  ``loss = loss / N``, ``loss.div_(N)``).
"""

from __future__ import annotations

import ast
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass

_METHODS = frozenset({"backward", "step", "zero_grad", "clip_grad_norm_", "clip_grad_value_", "unscale_"})
Link = tuple[str, ...]
Chain = tuple[Link, ...]


@dataclass(frozen=True)
class Call:
    """One training call: what it calls (``optimizer.step``; ``backward`` for any backward),
    its receiver as written, its chain, and its text."""

    key: str
    receiver: str
    chain: Chain
    text: str


def training_calls(tree: ast.Module) -> list[Call]:
    """Every training call of ``tree`` that stands as its own statement, in source order."""
    found: list[Call] = []
    _walk(tree.body, (), found)
    return found


def _walk(body: list[ast.stmt], chain: Chain, found: list[Call]) -> None:
    for statement in body:
        if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Call):
            call = _training_call(statement.value, chain)
            if call is not None:
                found.append(call)
        for link, inner in _children(statement):
            _walk(inner, (*chain, link) if link else chain, found)


def _children(statement: ast.stmt) -> Iterator[tuple[Link | None, list[ast.stmt]]]:
    """The blocks a compound statement holds, each with the link it adds to the chain."""
    if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        yield ("def", statement.name), statement.body
    elif isinstance(statement, ast.If):
        test = ast.unparse(statement.test)
        yield ("if", test, "then"), statement.body
        yield ("if", test, "else"), statement.orelse
    elif isinstance(statement, (ast.For, ast.AsyncFor)):
        header = f"{ast.unparse(statement.target)} in {ast.unparse(statement.iter)}"
        yield ("for", header), statement.body
        yield ("for", header, "else"), statement.orelse
    elif isinstance(statement, ast.While):
        yield ("while", ast.unparse(statement.test)), statement.body
        yield ("while", ast.unparse(statement.test), "else"), statement.orelse
    elif isinstance(statement, (ast.With, ast.AsyncWith)):
        yield ("with", ", ".join(ast.unparse(i) for i in statement.items)), statement.body
    elif isinstance(statement, (ast.Try, ast.TryStar)):
        yield ("try",), statement.body
        for handler in statement.handlers:
            yield ("except", ast.unparse(handler.type) if handler.type else ""), handler.body
        yield ("try", "else"), statement.orelse
        yield ("finally",), statement.finalbody
    elif isinstance(statement, ast.Match):
        for case in statement.cases:
            yield ("case", ast.unparse(case.pattern)), case.body


def _training_call(node: ast.Call, chain: Chain) -> Call | None:
    func = node.func
    if not isinstance(func, ast.Attribute):
        return None
    receiver = ast.unparse(func.value)
    if func.attr == "update" and "scaler" in receiver.lower():
        return Call(f"{receiver}.update", receiver, chain, ast.unparse(node))
    if func.attr not in _METHODS:
        return None
    key = "backward" if func.attr == "backward" else f"{receiver}.{func.attr}"
    return Call(key, receiver, chain, ast.unparse(node))


def call_violations(before: ast.Module, after: ast.Module) -> list[str]:
    """How the fixes changed the training calls beyond moving a call to the boundary,
    rewriting one in place (``model.zero_grad()`` becomes ``optimizer.zero_grad()``),
    removing a duplicate or inserting an unscale."""
    old, new = training_calls(before), training_calls(after)
    was, now = Counter((c.key, c.chain) for c in old), Counter((c.key, c.chain) for c in new)
    lost, gained = list((was - now).elements()), list((now - was).elements())
    problems: list[str] = []
    for key, chain in list(lost):
        target = next((g for g in gained if g[0] == key and _keeps(key, chain, g[1], new)), None)
        if target is None:
            continue
        lost.remove((key, chain))
        gained.remove(target)
        if now[target] > 1:
            problems.append(f"`{key}` moved where the same call already runs: {_show(target[1])}")
    for key, chain in list(lost):
        rewritten = next((g for g in gained if g[1] == chain and _method(g[0]) == _method(key)), None)
        if rewritten is not None:
            lost.remove((key, chain))
            gained.remove(rewritten)
    for key, chain in lost:
        if not any(_removable(chain, c) for k, c in now.elements() if k == key):
            problems.append(f"`{key}` removed from {_show(chain)} (ran under its own condition, "
                            "or no copy of it remains)")
    for key, chain in gained:
        if key.endswith(".unscale_"):
            problems += _unguarded(key, chain, new)
        else:
            problems.append(f"`{key}` added at {_show(chain)}")
    problems += _divided_twice(before, after, old, new)
    return problems


def _method(key: str) -> str:
    return key.rsplit(".", 1)[-1]


def _split(first: Chain, second: Chain) -> tuple[Chain, Chain]:
    """The parts of two chains below their common prefix."""
    shared = 0
    while shared < min(len(first), len(second)) and first[shared] == second[shared]:
        shared += 1
    return first[shared:], second[shared:]


def _keeps(key: str, old: Chain, new: Chain, after: list[Call]) -> bool:
    """Whether a call moved from ``old`` to ``new`` still runs under every condition it had:
    the links of ``old`` below the shared part appear in order in ``new``'s, except a loop
    left behind that still runs a backward (a micro-batch loop) and, inside such a loop, the
    gate of another call's optimizer step (a per-update call moved to once per epoch)."""
    left, right = _split(old, new)
    prefix = old[: len(old) - len(left)]
    position = 0
    left_a_loop = False
    for depth, link in enumerate(left):
        found = next((i for i in range(position, len(right)) if right[i] == link), None)
        if found is not None:
            position = found + 1
            continue
        place = (*prefix, *left[: depth + 1])
        if link[0] in ("for", "while") and len(link) == 2 and _runs_under(after, place, "backward", key):
            left_a_loop = True
            continue
        if left_a_loop and link[0] == "if" and _runs_under(after, place, "step", key):
            continue
        return False
    return True


def _runs_under(calls: list[Call], place: Chain, method: str, moved: str) -> bool:
    """Whether a call of ``method`` other than ``moved`` runs at or below ``place``."""
    return any(c.key != moved and _method(c.key) == method and c.chain[: len(place)] == place for c in calls)


def _removable(removed: Chain, copy: Chain) -> bool:
    """A call removed as a duplicate of ``copy``: below what they share, it stood under no
    condition, ``with`` or ``try`` of its own (a loop it shared with the backward is fine)."""
    left, _ = _split(removed, copy)
    return all(link[0] in ("for", "while") and len(link) == 2 for link in left)


def _unguarded(key: str, chain: Chain, calls: list[Call]) -> list[str]:
    """An inserted call must stand under the conditions every other call of its receiver has."""
    receiver = key.rsplit(".", 1)[0]
    others = [c.chain for c in calls if c.receiver == receiver and c.key != key]
    if not others:
        return []
    shared = {link for link in others[0] if link[0] == "if"}
    for other in others[1:]:
        shared &= set(other)
    missing = sorted(link for link in shared if link not in chain)
    return [f"`{key}` inserted outside `if {link[1]}:` that guards every other use of `{receiver}`"
            for link in missing]


def _divided_twice(before: ast.Module, after: ast.Module, old: list[Call], new: list[Call]) -> list[str]:
    """A backward rewritten to ``(loss / N).backward()`` whose loss its function still divides by
    N elsewhere (a division the fixes removed is not counted)."""
    written = {c.text for c in old}
    problems = []
    for call in new:
        if call.key != "backward" or call.text in written:
            continue
        where = tuple(link[1] for link in call.chain if link[0] == "def")
        already = (_divisions(_scope(before, where), statements=True)
                   & _divisions(_scope(after, where), statements=True))
        for name, divisor in _divisions(ast.parse(call.text)):
            if (name, divisor) in already:
                problems.append(f"`{call.text}` divides `{name}` by `{divisor}` again")
    return problems


def _scope(tree: ast.Module, where: tuple[str, ...]) -> ast.AST:
    """The function (or class) at the path of ``def`` names ``where``; the module for ``()``.
    The same name divided in another function is another loss."""
    node: ast.AST = tree
    for name in where:
        node = next(s for s in ast.walk(node) if s is not node
                    and isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and s.name == name)
    return node


def _divisions(tree: ast.AST, statements: bool = False) -> set[tuple[str, str]]:
    """(name, divisor) of ``name / divisor`` in ``tree`` (with ``statements``: of the
    assignments ``name = name / divisor``, ``name /= divisor`` and ``name.div_(divisor)``)."""
    found: set[tuple[str, str]] = set()
    for node in ast.walk(tree):
        if not statements and isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            found.add((ast.unparse(node.left), ast.unparse(node.right)))
        elif statements and isinstance(node, ast.AugAssign) and isinstance(node.op, ast.Div):
            found.add((ast.unparse(node.target), ast.unparse(node.value)))
        elif statements and isinstance(node, ast.Assign) and len(node.targets) == 1:
            value = node.value
            if isinstance(value, ast.BinOp) and isinstance(value.op, ast.Div):
                found.add((ast.unparse(node.targets[0]), ast.unparse(value.right)))
        elif (statements and isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
              and node.func.attr == "div_" and node.args):
            found.add((ast.unparse(node.func.value), ast.unparse(node.args[-1])))
    return found


def _show(chain: Chain) -> str:
    return " > ".join(" ".join(link) for link in chain) or "module level"
