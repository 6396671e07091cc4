"""GL109 optimizer-step-in-backward-hook: an optimizer stepped inside backward in code that accumulates."""

from __future__ import annotations

import ast
from collections.abc import Iterator, Sequence

from gradlint.catalogue import CATALOGUE
from gradlint.model.backward_hooks import HOOK_REGISTRATIONS, IN_BACKWARD, accumulates, hook_steps, scope_of
from gradlint.model.events import TrainingLoop
from gradlint.project.context import ProjectContext
from gradlint.rules.base import Finding, Invalid, ModuleRule, span_of
from gradlint.rules.readers import engine_loop


class OptimizerStepInBackwardHook(ModuleRule):
    info = CATALOGUE["GL109"]
    words = tuple(sorted(HOOK_REGISTRATIONS | IN_BACKWARD))

    def check_module(self, tree: ast.Module, lines: list[str],
                     loops: Sequence[TrainingLoop] = (), project: ProjectContext | None = None) -> Iterator[Finding]:
        if any(engine_loop(loop) for loop in loops):
            return  # a DeepSpeed engine owns the window (and its own hooks)
        for found in hook_steps(tree):
            scope = scope_of(tree, found.call)
            if not (accumulates(scope) or any(loop.accumulating and _within(loop, scope) for loop in loops)):
                continue
            what = ("this steps the optimizer" if found.hook in IN_BACKWARD
                    else f"{found.hook} runs {found.action}")
            yield Finding(span_of(found.call, lines),
                          f"{what} inside backward, but this code accumulates gradients",
                          detail="Each micro-batch steps on its own gradient, so the window never adds up; step "
                          "once per update outside backward, or drop the accumulation.")

    VALID = (
        """\
import torch


def train(model, loader):
    optimizer_dict = {p: torch.optim.AdamW([p], lr=1e-4) for p in model.parameters()}

    def optimizer_hook(parameter):
        optimizer_dict[parameter].step()
        optimizer_dict[parameter].zero_grad()

    for p in model.parameters():
        p.register_post_accumulate_grad_hook(optimizer_hook)
    for x, y in loader:
        model(x, y).backward()
""",
        """\
import torch


def train(model, loader, accum_steps):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    for p in model.parameters():
        p.register_hook(lambda grad: grad.clamp(-1.0, 1.0))
    for step, (x, y) in enumerate(loader):
        (model(x, y) / accum_steps).backward()
        if (step + 1) % accum_steps == 0:
            optimizer.step()
            optimizer.zero_grad()
""",
    )
    INVALID = (
        Invalid("""\
import torch


def train(model, loader, accum_steps):
    optimizer_dict = {p: torch.optim.AdamW([p], lr=1e-4) for p in model.parameters()}

    def optimizer_hook(parameter):
        optimizer_dict[parameter].step()
        optimizer_dict[parameter].zero_grad()

    for p in model.parameters():
        p.register_post_accumulate_grad_hook(optimizer_hook)
    for x, y in loader:
        (model(x, y) / accum_steps).backward()
""", ((12, "GL109"),)),
    )


def _within(loop: TrainingLoop, scope: ast.AST) -> bool:
    """Whether ``loop`` lies in ``scope`` (top-level code: in no function or class)."""
    line = loop.span.line
    if not isinstance(scope, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return loop.unit.unit.name == "<module>"
    return scope.lineno <= line <= (scope.end_lineno or scope.lineno)
