"""Model classes of one module that hold BatchNorm layers, and where training code builds them.

BatchNorm normalises with the statistics of the batch it sees; under gradient accumulation
that is one micro-batch, not the window. This module finds, in the module's ``ast``, the
classes whose methods construct ``BatchNorm1d/2d/3d`` layers (not ``SyncBatchNorm``, and not in
a class that freezes them with ``eval()`` or ``requires_grad_(False)``), and through the project
the model classes of other modules that the training code builds.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

from gradlint.project.context import ProjectContext
from gradlint.project.symbols import ClassInfo

_LAYER = re.compile(r"^BatchNorm[123]d$")
_FREEZES = ("eval", "requires_grad_", "convert_sync_batchnorm", "freeze_bn", "freeze")


def batchnorm_classes(tree: ast.Module) -> dict[str, list[ast.Call]]:
    """Top-level class name -> the ``BatchNorm*d(...)`` calls in its methods, for classes that
    do not freeze them. A module that converts to ``SyncBatchNorm`` anywhere has none."""
    if converts(tree):
        return {}
    found: dict[str, list[ast.Call]] = {}
    for cls in tree.body:
        if isinstance(cls, ast.ClassDef):
            calls = layers_of(cls)
            if calls:
                found[cls.name] = calls
    return found


def converts(tree: ast.AST) -> bool:
    """Whether the code converts to (or builds) ``SyncBatchNorm`` anywhere."""
    return any(isinstance(n, ast.Attribute) and n.attr in ("convert_sync_batchnorm", "SyncBatchNorm")
               for n in ast.walk(tree))


def layers_of(cls: ast.ClassDef) -> list[ast.Call]:
    """The class's ``BatchNorm*d(...)`` calls; none when the class freezes its layers."""
    calls = [n for n in ast.walk(cls) if isinstance(n, ast.Call) and _LAYER.match(_last(n.func))]
    if any(isinstance(n, ast.Call) and _last(n.func) in _FREEZES for n in ast.walk(cls)):
        return []
    return calls


@dataclass(frozen=True)
class ProjectModel:
    """A model class of another project module that holds BatchNorm layers."""

    path: Path
    name: str
    layers: list[ast.Call]


def project_model(project: ProjectContext, name: str) -> ProjectModel | None:
    """The class ``name`` (as written in the linted module) when it is defined in another project
    module and holds unfrozen BatchNorm layers (and that module does not convert them)."""
    found = project.index.lookup(project.path, name)
    if not isinstance(found, ClassInfo) or found.definition.path == project.path:
        return None
    tree = project.index.tree(found.definition.path)
    if tree is None or converts(tree):
        return None
    cls = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.lineno == found.definition.line), None)
    layers = layers_of(cls) if cls is not None else []
    return ProjectModel(found.definition.path, cls.name, layers) if cls is not None and layers else None


def builds(code: str, name: str) -> bool:
    """Whether ``code`` calls ``name(...)`` (a class constructed by name)."""
    return re.search(rf"(?<![\w.]){re.escape(name)}\s*\(", code) is not None


def _last(func: ast.expr) -> str:
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else ""
