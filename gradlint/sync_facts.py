"""What a module tells about DDP's sync guards, read from its ``ast`` (only when its text
mentions ``no_sync``): the functions that wrap a guard, the models that have one and the
functions called inside one."""

from __future__ import annotations

import ast

from gradlint.names import dotted_name
from gradlint.walks import walk

GUARD_ATTRS = frozenset({"no_sync", "no_backward_sync"})


def sync_facts(tree: ast.Module) -> tuple[set[str], set[str]]:
    """``(helpers, models)``: the functions whose own body reads ``x.no_sync`` and yields (a
    context manager, or a generator that enters a guard per micro-batch) or returns it
    (fairseq's ``maybe_no_sync``), and the receivers of ``x.no_sync`` / ``hasattr(x, "no_sync")``
    (models wrapped in DistributedDataParallel or FSDP)."""
    helpers: set[str] = set()
    models: set[str] = set()
    _walk(tree, None, helpers, models)
    return helpers, models


def _walk(node: ast.AST, function: ast.FunctionDef | ast.AsyncFunctionDef | None,
          helpers: set[str], models: set[str]) -> None:
    for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
            _walk(child, child, helpers, models)
            continue
        receiver = _guard_receiver(child)
        if receiver is not None:
            if receiver:
                models.add(receiver)
            if function is not None and _hands_back(function, child):
                helpers.add(function.name)
        _walk(child, function, helpers, models)


def _guard_receiver(node: ast.AST) -> str | None:
    """``m`` for ``m.no_sync`` or ``hasattr(m, "no_sync")`` (the empty string when ``m`` is
    not a dotted name), else None."""
    if isinstance(node, ast.Attribute) and node.attr in GUARD_ATTRS:
        return dotted_name(node.value) or ""
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "hasattr"
            and len(node.args) == 2 and isinstance(node.args[1], ast.Constant) and node.args[1].value in GUARD_ATTRS):
        return dotted_name(node.args[0]) or ""
    return None


def _hands_back(function: ast.FunctionDef | ast.AsyncFunctionDef, guard: ast.AST) -> bool:
    """Whether ``function`` yields in its own body (a context manager or a generator around
    its guard), or returns the guard itself (``return self.model.no_sync()``)."""
    stack: list[ast.AST] = list(function.body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Yield, ast.YieldFrom)):
            return True
        if isinstance(node, ast.Return) and node.value is not None and any(n is guard for n in ast.walk(node.value)):
            return True
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            stack.extend(ast.iter_child_nodes(node))
    return False


def enters_guard(expr: ast.expr, helpers: set[str]) -> bool:
    """Whether the ``with`` item ``expr`` enters a sync guard: ``m.no_sync()``, a call holding one
    (``conditional_context(m.no_sync(), enable=...)``), either arm of an inline choice, or a call
    of a module function that wraps one (``helpers``)."""
    for node in ast.walk(expr):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
            if name in GUARD_ATTRS or name in helpers:
                return True
    return False


def guarded_calls(tree: ast.Module, helpers: set[str]) -> set[str]:
    """Names of the functions and ``self`` methods called by a function of the module that
    enters a sync guard: the guard may cover the forward of a loss they receive
    (``with ctx: loss = self.model(x)``, then ``self.run_optimizer(loss)``)."""
    found: set[str] = set()
    bound = {t.id for node in walk(tree) if isinstance(node, ast.Assign) and enters_guard(node.value, helpers)
             for t in node.targets if isinstance(t, ast.Name)}  # `ctx = m.no_sync() if skip else nullcontext()`
    for function in (n for n in walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))):
        withs = [n for n in walk(function) if isinstance(n, (ast.With, ast.AsyncWith))]
        if not any(enters_guard(i.context_expr, helpers) or isinstance(i.context_expr, ast.Name) and i.context_expr.id in bound
                   for w in withs for i in w.items):
            continue
        for call in (c for c in walk(function) if isinstance(c, ast.Call)):
            func = call.func
            if isinstance(func, ast.Name) and func.id != function.name:
                found.add(func.id)
            elif (isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self"
                  and func.attr != function.name):
                found.add(func.attr)
    return found
