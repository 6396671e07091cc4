"""Fixes: text edits that rewrite a training loop to the canonical update skeleton.

Rules call the builders in :mod:`gradlint.fixes.skeleton`; :mod:`gradlint.fixer` applies
the resulting fixes to a file.
"""

from gradlint.fixes.skeleton import (
    clip_before_step,
    clip_to_boundary,
    divide_loss,
    remove_division,
    scheduler_after_step,
    scheduler_to_boundary,
    step_to_boundary,
    unscale_before_clip,
    zero_grad_after_step,
    zero_grad_to_boundary,
)

__all__ = [
    "clip_before_step",
    "clip_to_boundary",
    "divide_loss",
    "remove_division",
    "scheduler_after_step",
    "scheduler_to_boundary",
    "step_to_boundary",
    "unscale_before_clip",
    "zero_grad_after_step",
    "zero_grad_to_boundary",
]
