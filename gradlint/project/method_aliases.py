"""``self`` attributes that hold one of the class's own bound methods: ``self.step_fn =
self._train_step`` in ``__init__``, then ``self.step_fn(batch)`` in the loop calls that method.

An attribute is an alias of method ``m`` only when every assignment to it in the class and its
project bases is ``self.m`` (one method), or a call that wraps the attribute itself
(``self.step_fn = compile_fn(self.step_fn)``: a decorator applied to the callable, which still
runs it). Any other assignment (another method, a parameter, a lambda, a factory's result) makes
the attribute unknown: the call is then not followed.
"""

from __future__ import annotations

import ast

from gradlint.project.kinds import KindReader
from gradlint.project.symbols import ClassInfo
from gradlint.walks import walk

_UNKNOWN = ""


def method_aliases(reader: KindReader, cls: ClassInfo) -> dict[str, str]:
    """Attribute -> the method name it always holds, for ``cls`` (its own and its project
    bases' assignments together)."""
    found: dict[str, str] = {}
    for owner in reader.with_bases(cls):
        for method in owner.methods.values():
            node = reader.node(method)
            if node is not None:
                _read(node, found)
    return {attr: name for attr, name in found.items() if name != _UNKNOWN}


def _read(function: ast.FunctionDef | ast.AsyncFunctionDef, found: dict[str, str]) -> None:
    """Record what each ``self.<attr> = ...`` of ``function`` binds (nested functions included:
    they may assign the attribute too)."""
    for node in walk(function):
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign):
            if node.value is None:
                continue  # a declaration binds nothing
            targets, value = [node.target], node.value
        elif isinstance(node, ast.AugAssign):
            targets, value = [node.target], None
        else:
            continue
        for target in targets:
            for attr in _self_attributes(target):
                bound = _bound_method(value, attr) if len(targets) == 1 and isinstance(target, ast.Attribute) else None
                if bound is None:
                    found[attr] = _UNKNOWN
                elif bound != attr:  # a wrap of the attribute itself keeps what it holds
                    found[attr] = bound if found.get(attr, bound) == bound else _UNKNOWN


def _self_attributes(target: ast.expr) -> list[str]:
    """The ``self.<attr>`` names a target assigns (in tuples and lists too)."""
    if isinstance(target, (ast.Tuple, ast.List)):
        return [name for element in target.elts for name in _self_attributes(element)]
    if isinstance(target, ast.Starred):
        return _self_attributes(target.value)
    if isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name) and target.value.id == "self":
        return [target.attr]
    return []


def _bound_method(value: ast.expr | None, attr: str) -> str | None:
    """The method name ``value`` binds (``self.m``), ``attr`` itself for a call wrapping
    ``self.<attr>`` (a decorator applied in place), else None."""
    if isinstance(value, ast.Attribute) and isinstance(value.value, ast.Name) and value.value.id == "self":
        return value.attr
    if isinstance(value, ast.Call) and any(
            isinstance(a, ast.Attribute) and isinstance(a.value, ast.Name) and a.value.id == "self" and a.attr == attr
            for a in [*value.args, *(k.value for k in value.keywords)]):
        return attr
    return None
