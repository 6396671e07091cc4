"""GL502 batchnorm-under-accumulation: BatchNorm layers in a model trained with accumulation."""

from __future__ import annotations

import ast
from collections.abc import Iterator, Sequence

from gradlint.catalogue import CATALOGUE
from gradlint.model.batchnorm import batchnorm_classes, builds, converts, project_model
from gradlint.model.events import TrainingLoop
from gradlint.names import dotted_name
from gradlint.project.context import ProjectContext
from gradlint.rules.base import Finding, Invalid, ModuleRule, span_of
from gradlint.rules.readers import engine_loop


class BatchnormUnderAccumulation(ModuleRule):
    info = CATALOGUE["GL502"]
    words = ("BatchNorm", "backward")

    def check_module(self, tree: ast.Module, lines: list[str], loops: Sequence[TrainingLoop] = (),
                     project: ProjectContext | None = None) -> Iterator[Finding]:
        accumulating = [loop for loop in loops if loop.accumulating and not engine_loop(loop)]
        if not accumulating:
            return
        for name, layers in batchnorm_classes(tree).items():
            loop = next((lp for lp in accumulating if builds(lp.unit.module.code, name)), None)
            if loop is None:
                continue
            for call in layers:
                yield Finding(span_of(call, lines),
                              f"{name}'s BatchNorm sees one micro-batch, not the window ({_where(loop)})",
                              detail=_WHY)
        if project is not None and not converts(tree):
            yield from self._built_here(tree, lines, accumulating, project)

    def _built_here(self, tree: ast.Module, lines: list[str], loops: list[TrainingLoop],
                    project: ProjectContext) -> Iterator[Finding]:
        """Models of other project modules built by the training code: reported at the
        construction here (the layers' module has no loop to tell it)."""
        seen: set[int] = set()
        for loop in loops:
            unit = loop.unit.unit
            for call in ast.walk(tree):
                if not isinstance(call, ast.Call) or id(call) in seen \
                        or not unit.start_line <= call.lineno <= unit.end_line:
                    continue
                name = dotted_name(call.func)
                model = project_model(project, name) if name else None
                if model is None:
                    continue
                seen.add(id(call))
                where = model.path.name
                yield Finding(span_of(call, lines),
                              f"{name}'s BatchNorm ({where}:{model.layers[0].lineno}) sees one micro-batch, not "
                              f"the window ({_where(loop)})", detail=_WHY)

    VALID = (
        """\
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(3, 16, 3), nn.GroupNorm(4, 16), nn.ReLU())


def train(loader, optimizer, accum):
    model = Net()
    for i, (x, y) in enumerate(loader):
        (model(x, y) / accum).backward()
        if (i + 1) % accum == 0 or i + 1 == len(loader):
            optimizer.step()
            optimizer.zero_grad()
""",
    )
    INVALID = (
        Invalid("""\
import torch.nn as nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Conv2d(3, 16, 3), nn.BatchNorm2d(16), nn.ReLU())


def train(loader, optimizer, accum):
    model = Net()
    for i, (x, y) in enumerate(loader):
        (model(x, y) / accum).backward()
        if (i + 1) % accum == 0 or i + 1 == len(loader):
            optimizer.step()
            optimizer.zero_grad()
""", ((7, "GL502"),)),
    )


_WHY = ("The model is trained with gradient accumulation, so its batch statistics are noisier than the "
        "effective batch size suggests; consider GroupNorm / LayerNorm or larger micro-batches.")


def _where(loop: TrainingLoop) -> str:
    return f"{loop.unit.unit.name}, line {loop.span.line}"
