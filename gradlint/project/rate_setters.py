"""A project's own copy of torch's learning-rate scheduler, told by what its ``step`` does: like
``torch.optim.lr_scheduler.LRScheduler.step`` it advances ``self.last_epoch`` and writes the
learning rate of the optimizer's parameter groups (``param_group["lr"] = lr``), and it steps
nothing itself (no ``.step()`` call: not an optimizer wrapper that schedules, then steps). Such a
schedule applies its first rate when built, so stepping it before the optimizer skips that rate.
A class of its own that sets the rate of the update about to run from a counter of its own
(``self._t``) is not one: it may be meant to run before the step."""

from __future__ import annotations

import ast

from gradlint.walks import walk


def copies_torch_schedule(step: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Whether ``step`` advances ``self.last_epoch``, assigns ``<group>["lr"]`` and calls no
    ``step`` method."""
    nodes = walk(step)
    if any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "step" for n in nodes):
        return False
    targets = [t for n in nodes if isinstance(n, (ast.Assign, ast.AugAssign))
               for t in (n.targets if isinstance(n, ast.Assign) else [n.target])]
    return any(_lr_item(t) for t in targets) and any(_last_epoch(t) for t in targets)


def _lr_item(target: ast.expr) -> bool:
    """``group["lr"]`` (any subscripted object)."""
    return isinstance(target, ast.Subscript) and isinstance(target.slice, ast.Constant) and target.slice.value == "lr"


def _last_epoch(target: ast.expr) -> bool:
    """``self.last_epoch``."""
    return (isinstance(target, ast.Attribute) and target.attr == "last_epoch" and isinstance(target.value, ast.Name)
            and target.value.id == "self")
