"""Fixes: text edits that rewrite a training loop to the canonical update skeleton.

Rules call the builders in :mod:`gradlint.fixes.skeleton`; :mod:`gradlint.fixer` applies
the resulting fixes to a file.
"""

from collections.abc import Callable
from functools import wraps
from typing import TypeVar

from gradlint.fixes import skeleton

_Builder = TypeVar("_Builder", bound=Callable)


def _within_one_unit(builder: _Builder) -> _Builder:
    """Edits are made in the loop's own unit: a loop that trains through a helper it calls
    (events in another function) gets no fix rather than a cross-function move."""

    @wraps(builder)
    def build(loop, *args):
        return builder(loop, *args) if loop.single_unit else None

    return build  # type: ignore[return-value]


clip_before_step = _within_one_unit(skeleton.clip_before_step)
clip_to_boundary = _within_one_unit(skeleton.clip_to_boundary)
divide_loss = _within_one_unit(skeleton.divide_loss)
remove_division = _within_one_unit(skeleton.remove_division)
scheduler_after_step = _within_one_unit(skeleton.scheduler_after_step)
scheduler_to_boundary = _within_one_unit(skeleton.scheduler_to_boundary)
step_to_boundary = _within_one_unit(skeleton.step_to_boundary)
unscale_before_clip = _within_one_unit(skeleton.unscale_before_clip)
zero_grad_after_step = _within_one_unit(skeleton.zero_grad_after_step)
zero_grad_to_boundary = _within_one_unit(skeleton.zero_grad_to_boundary)

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
