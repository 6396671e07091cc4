"""What the screen reads of callables handed to functions (``self._with_events(self._step,
'step')``, whose ``_with_events(self, f, ...)`` runs ``f()``): the model follows such a call into
the function passed (:mod:`gradlint.model.passed_callables`), so the screen counts a passed
reference as a call, and a function that calls one of its parameters as a candidate unit."""

from __future__ import annotations

import ast


def passed_references(call: ast.Call) -> set[str]:
    """The functions and methods ``call`` hands over by name: ``_step`` for ``self._step``,
    ``train_step`` for ``train_step`` (arguments that are a plain or ``self.`` name)."""
    found: set[str] = set()
    for value in [*call.args, *(k.value for k in call.keywords)]:
        if isinstance(value, ast.Name):
            found.add(value.id)
        elif isinstance(value, ast.Attribute) and isinstance(value.value, ast.Name) and value.value.id == "self":
            found.add(value.attr)
    return found


def calls_parameter(function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Whether ``function`` itself (not a function or lambda it defines) calls one of its
    parameters by name (``f()``; ``self`` and ``cls`` are not counted)."""
    names = parameter_names(function)
    todo: list[ast.AST] = [*function.body]
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in names:
            return True
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            todo.extend(ast.iter_child_nodes(node))
    return False


def parameter_names(function: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    """The parameters of ``function`` a call may name (not ``self`` or ``cls``)."""
    args = function.args
    every = [*args.posonlyargs, *args.args, *args.kwonlyargs]
    return {a.arg for a in every} - {"self", "cls"}
