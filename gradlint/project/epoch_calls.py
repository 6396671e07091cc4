"""Which functions and methods a module calls once per epoch: from the body of an epoch loop
(``for epoch in range(...)``, ``for epoch in epoch_counter``, ``while epoch < n``), read with
``ast``. A function called there runs one epoch per call, so a loop over the data inside it is one
epoch of several (``Parser.train`` calling ``self._train(loader)`` for each epoch)."""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


@dataclass(frozen=True)
class EpochCalls:
    """The names a module calls from inside an epoch loop."""

    functions: frozenset[str]  # `train(...)`: a plain name
    methods: dict[str, frozenset[str]] = field(hash=False)  # class -> `self.m(...)` in its methods


def epoch_calls(tree: ast.Module) -> EpochCalls:
    """The plain-name calls and, per class, the ``self.m(...)`` calls written inside an epoch
    loop of ``tree`` (a nested function's body is not the loop's: it runs when called)."""
    functions: set[str] = set()
    methods: dict[str, frozenset[str]] = {}
    for node in tree.body:
        if isinstance(node, ast.ClassDef):
            own: set[str] = set()
            for item in node.body:
                if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)):
                    _collect(item.body, False, functions, own)
            methods[node.name] = frozenset(own)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            _collect(node.body, False, functions, set())
        else:
            _collect([node], False, functions, set())
    return EpochCalls(frozenset(functions), methods)


def _collect(statements: list[ast.stmt], in_epoch: bool, functions: set[str], methods: set[str]) -> None:
    for statement in statements:
        _walk(statement, in_epoch, functions, methods)


def _walk(node: ast.AST, in_epoch: bool, functions: set[str], methods: set[str]) -> None:
    if isinstance(node, _SCOPES):
        return
    if isinstance(node, (ast.For, ast.AsyncFor, ast.While)):
        inner = in_epoch or _is_epoch_loop(node)
        for child in ast.iter_child_nodes(node):
            _walk(child, inner if child in node.body else in_epoch, functions, methods)
        return
    if in_epoch and isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Name):
            functions.add(func.id)
        elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self":
            methods.add(func.attr)
    for child in ast.iter_child_nodes(node):
        _walk(child, in_epoch, functions, methods)


def _is_epoch_loop(loop: ast.For | ast.AsyncFor | ast.While) -> bool:
    """A loop whose header names the epoch: its target, what it iterates, or its test."""
    parts: list[ast.AST] = [loop.test] if isinstance(loop, ast.While) else [loop.target, loop.iter]
    return any("epoch" in ast.unparse(part).lower() for part in parts)
