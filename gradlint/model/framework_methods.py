"""Methods a framework calls once per batch: iteration bodies that the user never loops over.

Two facts about such methods, each one small table:

- :data:`BOUNDARY_OWNED`: methods of a framework class's subclass that the framework calls once
  per *micro-batch* while it owns the update boundary. Hugging Face's ``Trainer`` calls
  ``training_step`` (and through it ``compute_loss``) once per micro-batch and steps, clips,
  zeroes and advances the scheduler itself after the last micro-batch of each window, under
  ``no_sync`` for the others. An override is a micro-batch body: an optimizer step, clip,
  ``zero_grad`` or scheduler step written in it runs N times per update (GL101-GL104). How the
  Trainer scales the loss depends on the model (``model_accepts_loss_kwargs``) and is not read
  here: GL201/GL204 say nothing about these methods (GL205 covers ``compute_loss``). Subclasses
  are found with :mod:`gradlint.model.trainer_classes`' lineage (its ``HF_TRAINER_BASES``).
- :data:`GATE_CALLS` and :data:`FINAL_CALLS`: the helpers that hooks of mmcv / mmengine-style
  runners (``after_train_iter(self, runner)``, called once per iteration) gate their update with.
  ``self.every_n_iters(runner, k)`` is ``(runner.iter + 1) % k == 0``: a counted gate, already
  offset by one; ``self.is_last_iter(runner)`` and its kin name the end of the run or epoch: a
  final-window branch. A hook or callback that backpropagates and steps under such a gate (or
  its own ``self.count % k == 0``) is a gated loop; one that steps on every call is plain.

Lightning's ``training_step`` needs no entry: it backpropagates and steps itself and is read
like any per-batch function (its gate is written in it).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from gradlint.model.trainer_classes import trainer_subclasses

BOUNDARY_OWNED = frozenset({"training_step", "compute_loss"})
"""Methods of a Hugging Face ``Trainer`` subclass (``HF_TRAINER_BASES``) that the Trainer calls
once per micro-batch while it owns the update boundary."""

OWN_LOOP = frozenset({"train", "_inner_training_loop"})
"""Trainer methods that hold its loop: a subclass overriding one runs a loop of its own, and its
hooks are no longer known to be called once per micro-batch of the Trainer's windows."""

BOUNDARY_WORD = "Trainer"
"""A module without this word subclasses no Trainer (the screen's text test)."""


@dataclass(frozen=True)
class GateCall:
    """A hook helper that is true once every ``N`` iterations: ``(<first arg>.<counter> + 1) % N == 0``."""

    counter: str  # the attribute of the first argument that counts iterations
    modulus: int  # the position of N among the call's arguments


GATE_CALLS = {
    "every_n_iters": GateCall("iter", 1),  # mmcv Hook: (runner.iter + 1) % n == 0
    "every_n_train_iters": GateCall("iter", 1),  # mmengine Hook
    "every_n_inner_iters": GateCall("inner_iter", 1),  # mmcv Hook: (runner.inner_iter + 1) % n == 0
}
"""Gate helpers of runner hooks, by method name."""

FINAL_CALLS = frozenset({"is_last_iter", "is_last_train_iter", "is_last_inner_iter", "end_of_epoch"})
"""Hook helpers true on the last iteration of the run or epoch: a final-window branch."""


def boundary_owned_methods(tree: ast.Module) -> frozenset[tuple[str, str]]:
    """``(class, method)`` for each :data:`BOUNDARY_OWNED` method of ``tree`` written in a
    ``Trainer`` subclass (directly or through classes of the module) that keeps the Trainer's
    loop (no :data:`OWN_LOOP` override in its lineage)."""
    found: set[tuple[str, str]] = set()
    for cls, lineage in trainer_subclasses(tree):
        if any(_methods(c) & OWN_LOOP for c in lineage):
            continue
        found |= {(cls.name, name) for name in _methods(cls) & BOUNDARY_OWNED}
    return frozenset(found)


def _methods(cls: ast.ClassDef) -> set[str]:
    return {item.name for item in cls.body if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef))}
