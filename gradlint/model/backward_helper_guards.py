"""Sync guards entered by a backward helper after its caller ran the forward: a function that
receives the loss (``def backward(self, loss):``) and runs its backward under ``model.no_sync()``.
DDP decides during the forward whether the next backward all-reduces, so a guard entered after
the forward never skips the all-reduce (read with ``ast``, for GL404)."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass

from gradlint.callable_params import parameter_names
from gradlint.sync_facts import enters_guard, guarded_calls, sync_facts
from gradlint.walks import walk

_BACKWARDS = frozenset({"backward", "backward_by_grad"})
"""Methods that backpropagate their receiver or first argument (``loss.backward()``,
``optimizer.backward(loss)``, ColossalAI's ``optim.backward_by_grad(tensor, grad)``)."""
_SCALES = frozenset({"scale"})
"""Calls that return their (loss) argument scaled: ``scaler.scale(loss)``."""


@dataclass(frozen=True)
class LateGuard:
    """A ``with`` guard in ``function`` around a backward of ``parameter`` (or a value derived
    from it without a forward)."""

    guard: ast.With | ast.AsyncWith
    function: ast.FunctionDef | ast.AsyncFunctionDef
    parameter: str


def late_guards(tree: ast.Module) -> Iterator[LateGuard]:
    """The guards of the module's functions that cover only a backward of a received loss,
    unless a function of the module that calls it enters a sync guard itself (that caller may
    guard the forward too)."""
    helpers, _ = sync_facts(tree)
    guarded = guarded_calls(tree, helpers)
    for function in (n for n in walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))):
        if function.name in helpers or function.name in guarded:
            continue
        parameters = parameter_names(function)
        if not parameters:
            continue
        for guard in _own(function, (ast.With, ast.AsyncWith)):
            assert isinstance(guard, (ast.With, ast.AsyncWith))
            if not any(enters_guard(item.context_expr, helpers) for item in guard.items):
                continue
            derived = _derived(function, parameters, guard.lineno)
            received = next(_backpropagated(guard, derived), None)
            if received is not None:
                yield LateGuard(guard, function, derived[received])


def _own(function: ast.FunctionDef | ast.AsyncFunctionDef, kinds: tuple[type[ast.AST], ...]) -> Iterator[ast.AST]:
    """The nodes of ``kinds`` in ``function``'s own body (nested functions and classes are not)."""
    stack: list[ast.AST] = list(function.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        if isinstance(node, kinds):
            yield node
        stack.extend(ast.iter_child_nodes(node))


def _derived(function: ast.FunctionDef | ast.AsyncFunctionDef, parameters: set[str], guard_line: int) -> dict[str, str]:
    """The names holding a received value (each mapped to its parameter): the parameters and
    the names assigned only from them, constants, attributes and names set before the guard at
    ``guard_line``, without a forward (``loss = loss / N``, ``loss /= N``, ``loss =
    scaler.scale(loss)``); a name also assigned otherwise (``loss = model(x)``) is not one."""
    derived = {p: p for p in parameters}
    spoiled: set[str] = set()
    assignments = sorted((n for n in _own(function, (ast.Assign, ast.AugAssign, ast.AnnAssign))
                          if isinstance(n, (ast.Assign, ast.AugAssign, ast.AnnAssign))), key=lambda n: (n.lineno, n.col_offset))
    last: dict[str, int] = {}
    for node in assignments:
        for target in node.targets if isinstance(node, ast.Assign) else [node.target]:
            for name in _bound(target):
                last[name] = node.lineno
    outside = {name for name, line in last.items() if line < guard_line}
    for node in assignments:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        names = [t.id for t in targets if isinstance(t, ast.Name)]
        if isinstance(node, ast.AugAssign):
            source = derived.get(names[0]) if names and _plain(node.value, outside) else None
        else:
            source = _source(node.value, derived, outside) if node.value is not None and len(names) == len(targets) else None
        for name in (n for t in targets for n in _bound(t)):
            if source is None or derived.get(name, source) != source:
                spoiled.add(name)
            else:
                derived[name] = source
    return {name: p for name, p in derived.items() if name not in spoiled}


def _bound(target: ast.expr) -> Iterator[str]:
    """The names an assignment to ``target`` binds (``a``, ``a, *b``; not ``d[a]`` or ``x.a``)."""
    if isinstance(target, ast.Name):
        yield target.id
    elif isinstance(target, (ast.Tuple, ast.List)):
        for element in target.elts:
            yield from _bound(element)
    elif isinstance(target, ast.Starred):
        yield from _bound(target.value)


def _source(value: ast.expr, derived: dict[str, str], outside: set[str]) -> str | None:
    """The parameter ``value`` is computed from without a forward, if any."""
    if isinstance(value, ast.Name):
        return derived.get(value.id)
    if isinstance(value, ast.BinOp):
        left, right = _source(value.left, derived, outside), _source(value.right, derived, outside)
        if (left is None and not _plain(value.left, outside)) or (right is None and not _plain(value.right, outside)):
            return None  # a forward on one side
        return left if left is not None else right
    if isinstance(value, ast.UnaryOp):
        return _source(value.operand, derived, outside)
    if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute):
        if value.func.attr in _SCALES and len(value.args) == 1 and not value.keywords:
            return _source(value.args[0], derived, outside)
        if not value.args and not value.keywords:  # `loss.mean()`, `loss.float()`
            return _source(value.func.value, derived, outside)
    return None


def _plain(value: ast.expr, outside: set[str]) -> bool:
    """A constant, an attribute (``self.accumulate_size``, ``cfg.n``) or a name set before the
    guard (``outside``): no forward inside the guard in it."""
    if isinstance(value, ast.Constant) or isinstance(value, ast.Name) and value.id in outside:
        return True
    while isinstance(value, ast.Attribute):
        value = value.value
        if isinstance(value, ast.Name):
            return True
    return False


def _backpropagated(guard: ast.With | ast.AsyncWith, derived: dict[str, str]) -> Iterator[str]:
    """The received names the guard's body backpropagates (``loss.backward()``,
    ``optimizer.backward(loss)``, ``scaler.scale(loss).backward()``, ``(loss / N).backward()``)."""
    for statement in guard.body:
        for node in ast.walk(statement):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _BACKWARDS):
                continue
            operand = node.args[0] if node.args else node.func.value  # `optimizer.backward(loss)`, `loss.backward()`
            name = _received(operand, derived)
            if name is not None:
                yield name


def _received(operand: ast.expr, derived: dict[str, str]) -> str | None:
    """The received name ``operand`` is (or scales), if any."""
    if isinstance(operand, ast.Name):
        return operand.id if operand.id in derived else None
    if isinstance(operand, ast.Call) and isinstance(operand.func, ast.Attribute) and operand.func.attr in _SCALES:
        return _received(operand.args[0], derived) if len(operand.args) == 1 else None
    if isinstance(operand, ast.BinOp) and isinstance(operand.op, (ast.Div, ast.Mult)):  # `(loss / N).backward()`
        return _received(operand.left, derived) if isinstance(operand.right, (ast.Constant, ast.Attribute, ast.Name)) else None
    return None
