"""GL301: clipping after the optimizer step of the same update."""

from __future__ import annotations

import sys
from collections.abc import Iterator

from gradlint.catalogue import CATALOGUE
from gradlint.fixes import clip_before_step
from gradlint.model.events import Event, Role, TrainingLoop
from gradlint.rules.base import Finding, Rule
from gradlint.rules.helpers import call_text, last_backwards


def steps_between(loop: TrainingLoop, after: Event | None, before: Event) -> list[Event]:
    """Non-closure optimizer steps that run after ``after`` (if any) and before ``before``,
    at the same place."""
    return [
        e for e in loop.of(Role.STEP)
        if not e.closure and e.place is before.place and loop.flows(e, before)
        and (after is None or loop.flows(after, e))
    ]


def next_backward_or_end(loop: TrainingLoop, event: Event) -> int:
    """The order of the first backward after ``event``, or past the end of the loop."""
    later = [e.order for e in loop.of(Role.BACKWARD) if e.order > event.order]
    return later[0] if later else sys.maxsize


class ClipAfterStep(Rule):
    info = CATALOGUE["GL301"]

    def check(self, loop: TrainingLoop) -> Iterator[Finding]:
        for clip in loop.of(Role.CLIP):
            steps = [s for b in last_backwards(loop, clip) or [None] for s in steps_between(loop, b, clip)]
            if not steps:
                continue
            horizon = next_backward_or_end(loop, clip)
            stepped = {s.target for s in steps}
            if any(clip.order < e.order < horizon and not e.closure and e.target not in stepped
                   for e in loop.of(Role.STEP)):
                continue  # another optimizer steps after the clip (GANs, several optimizers)
            step = call_text(loop, steps[-1])
            yield Finding(clip.span, f"{call_text(loop, clip)} runs after {step}: the update has already "
                          f"used the unclipped gradient; clip before {step}",
                          clip_before_step(loop, clip, steps[-1]))
