"""Where the known LR schedule factories take their length (GL106), read on libcst calls by
the rule and on ``ast`` calls by the project reader of schedule factories."""

from __future__ import annotations

LENGTHS: dict[str, tuple[tuple[str, int | None], ...]] = {  # factory -> (keyword, positional index)
    "get_scheduler": (("num_training_steps", None),),
    "OneCycleLR": (("total_steps", 2), ("steps_per_epoch", None)),
    "CosineAnnealingLR": (("T_max", 1),),
    "LinearLR": (("total_iters", 3),),
    "PolynomialLR": (("total_iters", 1),),
}
SCHEDULE_FACTORY: tuple[tuple[str, int | None], ...] = (("num_training_steps", 2),)
"""transformers' ``get_*_schedule*(optimizer, warmup, total)``."""


def length_specs(callee: str | None) -> tuple[tuple[str, int | None], ...]:
    """The (keyword, positional index) of each length argument of the factory ``callee``."""
    last = (callee or "").rsplit(".", 1)[-1]
    if last in LENGTHS:
        return LENGTHS[last]
    if last.startswith("get_") and "schedule" in last and last != "get_scheduler":
        return SCHEDULE_FACTORY
    return ()
