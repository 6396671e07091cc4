"""What the visible callers of a module function pass it: the kinds of the arguments given to
each parameter by the functions of the sibling modules (the same folder) that import it and call
it (``train_one_epoch(model, ...)`` after ``model = DistributedDataParallel(model)`` in ``main``).

Only the folder of the function's module is looked at, at most :data:`_MAX_SIBLINGS` modules,
and only those whose text names the function: a caller elsewhere is not seen (the analysis then
says nothing that needs it).
"""

from __future__ import annotations

import ast
from pathlib import Path

from gradlint.names import Kind
from gradlint.project.context import ProjectContext
from gradlint.project.kinds import local_kinds

_MAX_SIBLINGS = 64


def passed_kinds(project: ProjectContext, path: Path, function: str,
                 parameters: list[str]) -> dict[str, set[Kind | None]]:
    """For each parameter of module function ``function`` (written in ``path``), the kinds of
    the arguments its callers in the sibling modules give it (None: an argument of no known
    kind)."""
    found: dict[str, set[Kind | None]] = {}
    path = path.absolute()
    try:
        siblings = sorted(p for p in path.parent.glob("*.py") if p != path)[:_MAX_SIBLINGS]
    except OSError:
        return found
    for sibling in siblings:
        text = project.index.text(sibling)
        if text is None or f"{function}(" not in text:
            continue
        symbols = project.index.symbols(sibling)
        tree = project.index.tree(sibling)
        target = symbols.imports.get(function) if symbols is not None else None
        if tree is None or symbols is None or target is None or target.path.absolute() != path or target.attribute != function:
            continue
        for node in tree.body:
            definition = symbols.functions.get(node.name) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) else None
            if definition is None or not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            calls = [c for c in ast.walk(node) if isinstance(c, ast.Call) and isinstance(c.func, ast.Name)
                     and c.func.id == function]
            if not calls:
                continue
            kinds = local_kinds(project.kinds, definition, None, node).kinds
            for call in calls:
                for parameter, argument in _bound_arguments(call, parameters):
                    kind = kinds.get(argument.id) if isinstance(argument, ast.Name) else None
                    found.setdefault(parameter, set()).add(kind)
    return found


def _bound_arguments(call: ast.Call, parameters: list[str]) -> list[tuple[str, ast.expr]]:
    """``(parameter, argument)`` for each argument of ``call`` that binds a named parameter."""
    if any(isinstance(a, ast.Starred) for a in call.args):
        return []
    bound = list(zip(parameters, call.args, strict=False))
    bound += [(k.arg, k.value) for k in call.keywords if k.arg is not None and k.arg in parameters]
    return bound
