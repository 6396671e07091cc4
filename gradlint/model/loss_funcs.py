"""The loss functions an HF Trainer is given (``compute_loss_func``), and the helpers they call.

``Trainer(compute_loss_func=f)``, ``self.compute_loss_func = f`` or ``= partial(f, ...)``
makes ``f`` the training loss of every micro-batch: the Trainer calls it instead of the model's
own loss. ``f`` may be a function of the module or, through the project, of another module; the
functions of its module that it calls by name are followed a few calls deep, since they compute
parts of that loss. What cannot be told (a method, a lambda, a call's result) is left out.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

from gradlint.names import dotted_name
from gradlint.project.context import ProjectContext
from gradlint.project.symbols import Definition
from gradlint.source import python_lines
from gradlint.walks import walk

Function = ast.FunctionDef | ast.AsyncFunctionDef
_DEPTH = 3
"""How many calls deep the helpers of a loss function are followed."""
_PARTIALS = frozenset({"partial", "functools.partial"})


@dataclass(frozen=True)
class LossFunction:
    """A function that computes (part of) a Trainer's ``compute_loss_func`` loss: its node, the
    module it is written in (None: the linted one) with that module's lines, and the line of the
    linted module that chooses the loss function."""

    node: Function
    home: Path | None
    lines: list[str] | None
    chosen_at: int


def loss_functions(tree: ast.Module, project: ProjectContext | None) -> list[LossFunction]:
    """Each function chosen as a ``compute_loss_func`` in ``tree``, and the functions of its
    module it calls by name (to :data:`_DEPTH` calls), once each."""
    found: list[LossFunction] = []
    seen: set[tuple[Path | None, int]] = set()
    local = _functions(tree)
    for value, line in _chosen(tree):
        name = dotted_name(value)
        if name is None:
            continue
        if name in local:
            start: tuple[Function, dict[str, Function], Path | None, list[str] | None] | None = (
                local[name], local, None, None)
        else:
            start = _in_project(name, project)
        if start is None:
            continue
        func, module, home, lines = start
        pending = [(func, 0)]
        while pending:
            current, depth = pending.pop()
            key = (home, current.lineno)
            if key in seen:
                continue
            seen.add(key)
            found.append(LossFunction(current, home, lines, line))
            if depth < _DEPTH:
                pending += [(module[callee], depth + 1) for callee in _callees(current) if callee in module]
    return found


def _chosen(tree: ast.Module) -> list[tuple[ast.expr, int]]:
    """(the function chosen, the line) of each ``compute_loss_func=f`` argument and
    ``self.compute_loss_func = f`` assignment, ``partial(f, ...)`` read as ``f``."""
    found: list[tuple[ast.expr, int]] = []
    for node in walk(tree):
        if isinstance(node, ast.Call):
            found += [(_unwrapped(k.value), node.lineno) for k in node.keywords if k.arg == "compute_loss_func"]
        elif isinstance(node, ast.Assign) and any(isinstance(t, ast.Attribute) and t.attr == "compute_loss_func"
                                                  for t in node.targets):
            found.append((_unwrapped(node.value), node.lineno))
    return found


def _unwrapped(value: ast.expr) -> ast.expr:
    if isinstance(value, ast.Call) and dotted_name(value.func) in _PARTIALS and value.args:
        return value.args[0]
    return value


def _functions(tree: ast.Module) -> dict[str, Function]:
    return {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}


def _callees(func: Function) -> set[str]:
    return {n.func.id for n in walk(func) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)}


def _in_project(name: str, project: ProjectContext | None,
                ) -> tuple[Function, dict[str, Function], Path, list[str]] | None:
    """The project function ``name`` names in another module, with that module's functions,
    path and lines."""
    if project is None:
        return None
    found = project.index.lookup(project.path, name)
    if not isinstance(found, Definition) or "." in found.qualname:
        return None
    node = project.kinds.node(found)
    tree = project.index.tree(found.path)
    text = project.index.text(found.path)
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or tree is None or text is None:
        return None
    return node, _functions(tree), found.path, python_lines(text)
