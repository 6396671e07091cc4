"""GL302 scheduler-before-optimizer: the LR scheduler advances before the optimizer step."""

from __future__ import annotations

from collections.abc import Iterator

from gradlint.catalogue import CATALOGUE
from gradlint.fixes import primitives as edit
from gradlint.model.events import Event, Role, TrainingLoop
from gradlint.rules.base import Change, Finding, Invalid, Rule
from gradlint.rules.readers import call_text, quoted, sole_step, update_steps


class SchedulerBeforeOptimizer(Rule):
    info = CATALOGUE["GL302"]

    def check(self, loop: TrainingLoop) -> Iterator[Finding]:
        for sched in loop.of(Role.SCHEDULER_STEP):
            if sched.metric or _follows_a_step(loop, sched):
                continue
            later = [s for s in update_steps(loop) if s.place is sched.place and loop.flows(sched, s)]
            if later:
                step = call_text(loop, later[0])
                yield Finding(sched.span, f"{call_text(loop, sched)} runs before {step} in the same update, so "
                              f"the first learning-rate value of the schedule is skipped; call it after {step}",
                              self.fix(_schedule_after_step, loop, sched))

    VALID = (
        """\
def train(model, loader, optimizer, scheduler):
    for x, y in loader:
        model(x, y).backward()
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad()
""",
        """\
def train(model, loader, optimizer, scheduler, head_optimizer, head_scheduler):
    for x, y in loader:
        model(x, y).backward()
        optimizer.step()
        scheduler.step()
        head_optimizer.step()
        head_scheduler.step()
        optimizer.zero_grad()
        head_optimizer.zero_grad()
""",
    )
    INVALID = (
        Invalid("""\
def train(model, loader, optimizer, scheduler):
    for x, y in loader:
        model(x, y).backward()
        scheduler.step()
        optimizer.step()
        optimizer.zero_grad()
""", ((4, "GL302"),), fixed="""\
def train(model, loader, optimizer, scheduler):
    for x, y in loader:
        model(x, y).backward()
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad()
"""),
    )


def _follows_a_step(loop: TrainingLoop, sched: Event) -> bool:
    """With several optimizers, a scheduler stepped right after one of them
    (``opt_a.step(); sched_a.step(); opt_b.step()``) follows its own optimizer: the model
    cannot tell which optimizer a scheduler drives, so a step before it in the same update
    is enough."""
    return any(s.place is sched.place and loop.flows(s, sched)
               and not any(s.order < b.order < sched.order for b in loop.of(Role.BACKWARD))
               for s in update_steps(loop))


def _schedule_after_step(loop: TrainingLoop, scheduler: Event) -> Change | None:
    """Move the scheduler step to just after the optimizer step (and its update work)."""
    step = sole_step(loop)
    region = edit.block_region(loop, scheduler)
    if step is None or region is None or not edit.in_region(loop, region, step):
        return None
    return Change(f"Move {quoted(loop, scheduler)} after {quoted(loop, step)}",
                  edit.move(loop, [scheduler], edit.canonical(loop, region, Role.SCHEDULER_STEP, [scheduler])))
