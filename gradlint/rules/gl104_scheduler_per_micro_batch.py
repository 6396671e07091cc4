"""GL104 scheduler-per-micro-batch: the LR scheduler advances on every micro-batch."""

from __future__ import annotations

from collections.abc import Iterator

from gradlint.catalogue import CATALOGUE
from gradlint.fixes import primitives as edit
from gradlint.model.events import Event, Role, TrainingLoop
from gradlint.rules.base import Change, Finding, Invalid, Rule
from gradlint.rules.readers import (
    OWN_STEP,
    call_text,
    paired_step_text,
    per_micro_batch,
    quoted,
    steps_of,
    unlinked_scheduler,
    unprepared_scheduler,
)


class SchedulerPerMicroBatch(Rule):
    info = CATALOGUE["GL104"]

    def check(self, loop: TrainingLoop) -> Iterator[Finding]:
        for event in per_micro_batch(loop, Role.SCHEDULER_STEP):
            if loop.accelerate_skips(event) and (accelerator := unlinked_scheduler(loop, event)):
                yield Finding(event.span, f"{call_text(loop, event)} advances on every micro-batch: `{accelerator}` "
                              "is built with step_scheduler_with_optimizer=False",
                              detail="With step_scheduler_with_optimizer=False the prepared scheduler no longer waits "
                              "for the optimizer's sync step, so inside accelerator.accumulate() it advances on every "
                              f"micro-batch; step it under `if {accelerator}.sync_gradients:`.")
                continue
            if event.metric:
                continue
            if loop.accelerate_skips(event):
                if unprepared_scheduler(loop, event):
                    yield Finding(event.span, f"{call_text(loop, event)} advances on every micro-batch: prepare the "
                                  "scheduler with accelerator.prepare", detail="Inside accelerator.accumulate(), "
                                  "Accelerate holds back only the schedulers that passed through accelerator.prepare; "
                                  "prepare this one with the optimizer.")
                continue
            yield Finding(event.span, f"{call_text(loop, event)} runs on every micro-batch; step it once per update, "
                          f"right after {paired_step_text(loop, event, OWN_STEP)}", self.fix(_schedule_once, loop, event),
                          detail="The LR schedule advances on every micro-batch, so warmup and decay run N times "
                          "too fast (N: micro-batches per update).")

    VALID = (
        """\
def train(model, loader, optimizer, scheduler, accum_steps):
    for step, (x, y) in enumerate(loader):
        (model(x, y) / accum_steps).backward()
        if (step + 1) % accum_steps == 0:
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad()
""",
        """\
def train(model, loader, optimizer, plateau, accum_steps):
    for step, (x, y) in enumerate(loader):
        loss = model(x, y) / accum_steps
        loss.backward()
        plateau.step(loss)
        if (step + 1) % accum_steps == 0:
            optimizer.step()
            optimizer.zero_grad()
""",
        """\
def train(model, loader, optimizer, accelerator, epochs):
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1000)
    model, optimizer, scheduler = accelerator.prepare(model, optimizer, scheduler)
    for x, y in loader:
        with accelerator.accumulate(model):
            accelerator.backward(model(x, y))
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad()
""",
    )
    INVALID = (
        Invalid("""\
def train(model, loader, optimizer, accelerator, epochs):
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1000)
    model, optimizer = accelerator.prepare(model, optimizer)
    for x, y in loader:
        with accelerator.accumulate(model):
            accelerator.backward(model(x, y))
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad()
""", ((8, "GL104"),)),
        Invalid("""\
def train(model, loader, optimizer, scheduler, accum_steps):
    for step, (x, y) in enumerate(loader):
        (model(x, y) / accum_steps).backward()
        scheduler.step()
        if (step + 1) % accum_steps == 0:
            optimizer.step()
            optimizer.zero_grad()
""", ((4, "GL104"),), fixed="""\
def train(model, loader, optimizer, scheduler, accum_steps):
    for step, (x, y) in enumerate(loader):
        (model(x, y) / accum_steps).backward()
        if (step + 1) % accum_steps == 0:
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad()
"""),
    )


def _schedule_once(loop: TrainingLoop, scheduler: Event) -> Change | None:
    """Move the scheduler step to the boundary, after the optimizer step, or remove it when the
    boundary already advances the same scheduler, so it never steps twice per update (unsafe:
    the schedule's horizon may be counted in micro-batches)."""
    region = edit.update_region(loop)
    steps = steps_of(loop)
    if region is None or not steps or not all(edit.in_region(loop, region, s) for s in steps):
        return None
    if edit.twins(loop, region, scheduler):
        return Change(f"Remove {quoted(loop, scheduler)}: the update boundary already advances it",
                      edit.remove_duplicate(loop, region, [scheduler]))
    return Change(f"Move {quoted(loop, scheduler)} to the update boundary, after the optimizer step",
                  edit.move(loop, [scheduler], edit.canonical(loop, region, Role.SCHEDULER_STEP, [scheduler])))
