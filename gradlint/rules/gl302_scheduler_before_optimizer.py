"""GL302 scheduler-before-optimizer: the LR scheduler advances before the optimizer step."""

from __future__ import annotations

from collections.abc import Iterator

from gradlint.catalogue import CATALOGUE
from gradlint.fixes import primitives as edit
from gradlint.model.events import Event, Role, TrainingLoop
from gradlint.rules.base import Change, Finding, Invalid, Rule
from gradlint.rules.readers import OWN_STEP, call_text, quoted, scheduled_optimizer, sole_step


class SchedulerBeforeOptimizer(Rule):
    info = CATALOGUE["GL302"]
    reads_update_scopes = True  # the order of the scheduler and the step needs no backward

    def check(self, loop: TrainingLoop) -> Iterator[Finding]:
        reported: set[int] = set()  # the loop's calls of helpers whose scheduler step was reported
        for sched in loop.of(Role.SCHEDULER_STEP):
            if sched.metric or sched.receiver in sched.unit.facts.unclassified:
                continue  # a project scheduler class of its own may set the coming update's rate in step()
            if sched.callers and id(sched.callers[0][0]) in reported:
                continue  # another scheduler of the same helper call (`sch1.step(); sch2.step()`): one finding
            optimizer = scheduled_optimizer(loop, sched)  # its own optimizer's steps only, when known
            steps = [s for s in _steps(loop) if optimizer is None or s.target == optimizer]
            if _follows_a_step(loop, sched, steps):
                continue
            later = [s for s in steps if s.place is sched.place and loop.flows(sched, s)]
            if not later:
                continue
            first = {s.target: s for s in reversed(later)}  # one step per optimizer (`if amp:` arms alike)
            named = [call_text(loop, s) for s in sorted(first.values(), key=lambda s: s.order)]
            step = named[0] if len(named) == 1 else None
            if sched.callers:
                reported.add(id(sched.callers[0][0]))
            yield Finding(sched.span, f"{call_text(loop, sched)} runs before {' and '.join(named)}; call it after "
                          f"{step or OWN_STEP}", self.fix(_schedule_after_step, loop, sched),
                          detail=f"Stepping the scheduler before {' and '.join(named)} in the same update skips the "
                          "first learning-rate value of the schedule.")

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


def _steps(loop: TrainingLoop) -> list[Event]:
    """The optimizer steps the loop's own code owns, a closure's too (``opt.step(closure)``
    applies the update like any step: a scheduler before it skips the first rate as well)."""
    return [e for e in loop.of(Role.STEP) if not e.engine_owned]


def _follows_a_step(loop: TrainingLoop, sched: Event, steps: list[Event]) -> bool:
    """Whether one of ``steps`` runs before the scheduler in the same update. With several
    optimizers and a scheduler whose optimizer is unknown (``opt_a.step(); sched_a.step();
    opt_b.step()``), any step before it is enough: it may follow its own optimizer."""
    return any(s.place is sched.place and loop.flows(s, sched)
               and not any(s.order < b.order < sched.order for b in loop.of(Role.BACKWARD))
               for s in steps)


def _schedule_after_step(loop: TrainingLoop, scheduler: Event) -> Change | None:
    """Move the scheduler step to just after the optimizer step (and its update work)."""
    step = sole_step(loop)
    region = edit.block_region(loop, scheduler)
    if step is None or region is None or not edit.in_region(loop, region, step):
        return None
    return Change(f"Move {quoted(loop, scheduler)} after {quoted(loop, step)}",
                  edit.move(loop, [scheduler], edit.canonical(loop, region, Role.SCHEDULER_STEP, [scheduler])))
