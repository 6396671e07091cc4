"""Model classes of one module that hold BatchNorm layers, and where training code builds them.

BatchNorm normalises with the statistics of the batch it sees; under gradient accumulation
that is one micro-batch, not the window. This module finds, in the module's ``ast``, the
classes whose methods construct ``BatchNorm1d/2d/3d`` layers (not ``SyncBatchNorm``, and not in
a class that freezes them with ``eval()`` or ``requires_grad_(False)``).
"""

from __future__ import annotations

import ast
import re

_LAYER = re.compile(r"^BatchNorm[123]d$")
_FREEZES = ("eval", "requires_grad_", "convert_sync_batchnorm", "freeze_bn", "freeze")


def batchnorm_classes(tree: ast.Module) -> dict[str, list[ast.Call]]:
    """Top-level class name -> the ``BatchNorm*d(...)`` calls in its methods, for classes that
    do not freeze them. A module that converts to ``SyncBatchNorm`` anywhere has none."""
    if any(isinstance(n, ast.Attribute) and n.attr in ("convert_sync_batchnorm", "SyncBatchNorm")
           for n in ast.walk(tree)):
        return {}
    found: dict[str, list[ast.Call]] = {}
    for cls in tree.body:
        if not isinstance(cls, ast.ClassDef):
            continue
        calls = [n for n in ast.walk(cls) if isinstance(n, ast.Call) and _LAYER.match(_last(n.func))]
        if calls and not any(isinstance(n, ast.Call) and _last(n.func) in _FREEZES for n in ast.walk(cls)):
            found[cls.name] = calls
    return found


def builds(code: str, name: str) -> bool:
    """Whether ``code`` calls ``name(...)`` (a class constructed by name)."""
    return re.search(rf"(?<![\w.]){re.escape(name)}\s*\(", code) is not None


def _last(func: ast.expr) -> str:
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else ""
