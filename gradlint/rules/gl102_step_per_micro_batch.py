"""GL102 step-per-micro-batch: the optimizer steps on every micro-batch of a window."""

from __future__ import annotations

from collections.abc import Iterator

from gradlint.catalogue import CATALOGUE
from gradlint.fixes import primitives as edit
from gradlint.model.events import Event, Place, Role, TrainingLoop
from gradlint.rules.base import Change, Finding, Invalid, Rule
from gradlint.rules.readers import call_text, per_micro_batch, quoted


class StepPerMicroBatch(Rule):
    info = CATALOGUE["GL102"]

    def check(self, loop: TrainingLoop) -> Iterator[Finding]:
        for event in per_micro_batch(loop, Role.STEP):
            if loop.accelerate_skips(event):
                continue
            yield Finding(event.span, f"{call_text(loop, event)} runs on every micro-batch; step once per update, "
                          "at the update boundary", self.fix(_step_once, loop, event),
                          detail="Stepping inside the accumulation window updates the weights from a partial "
                          "gradient on each micro-batch, so no update sees the whole window.")

    VALID = (
        """\
def train(model, loader, optimizer, accum_steps):
    for step, (x, y) in enumerate(loader):
        (model(x, y) / accum_steps).backward()
        if (step + 1) % accum_steps == 0:
            optimizer.step()
            optimizer.zero_grad()
""",
        """\
def train(model, loader, optimizer, accelerator):
    for batch in loader:
        with accelerator.accumulate(model):
            accelerator.backward(model(**batch).loss)
            optimizer.step()
            optimizer.zero_grad()
""",
        """\
def d_step(self, batch, optim_wrapper):
    d_optim_wrapper = optim_wrapper["discriminator"]
    d_optim_wrapper.backward(d_optim_wrapper.scale_loss(self.loss_real(batch)))
    d_optim_wrapper.backward(d_optim_wrapper.scale_loss(self.loss_fake(batch)))
    if d_optim_wrapper.should_update():
        d_optim_wrapper.step()
        d_optim_wrapper.zero_grad()
""",
        """\
def train(model, loader, optimizer, monitor):
    for x, y in loader:
        model(x, y).backward()
        optimizer.step()
        if monitor.should_update():
            optimizer.zero_grad()
""",
    )
    INVALID = (
        Invalid("""\
def train(model, loader, optimizer, accum_steps):
    for step, (x, y) in enumerate(loader):
        (model(x, y) / accum_steps).backward()
        optimizer.step()
        if (step + 1) % accum_steps == 0:
            optimizer.zero_grad()
""", ((4, "GL102"),), fixed="""\
def train(model, loader, optimizer, accum_steps):
    for step, (x, y) in enumerate(loader):
        (model(x, y) / accum_steps).backward()
        if (step + 1) % accum_steps == 0:
            optimizer.step()
            optimizer.zero_grad()
"""),
        Invalid("""\
def train(model, loader, optimizer, accum_steps):
    for step, (x, y) in enumerate(loader):
        (model(x, y) / accum_steps).backward()
        optimizer.step()
        if (step + 1) % accum_steps == 0:
            optimizer.step()
            optimizer.zero_grad()
""", ((4, "GL102"),), fixed="""\
def train(model, loader, optimizer, accum_steps):
    for step, (x, y) in enumerate(loader):
        (model(x, y) / accum_steps).backward()
        if (step + 1) % accum_steps == 0:
            optimizer.step()
            optimizer.zero_grad()
"""),
        Invalid("""\
def train(model, loader, optimizer, accum_steps, eager):
    for step, (x, y) in enumerate(loader):
        (model(x, y) / accum_steps).backward()
        if eager:
            optimizer.step()
        if (step + 1) % accum_steps == 0:
            optimizer.zero_grad()
""", ((5, "GL102"),)),
        Invalid("""\
def d_step(self, batch, optim_wrapper):
    d_optim_wrapper = optim_wrapper["discriminator"]
    d_optim_wrapper.backward(d_optim_wrapper.scale_loss(self.loss_real(batch)))
    d_optim_wrapper.step()
    d_optim_wrapper.backward(d_optim_wrapper.scale_loss(self.loss_fake(batch)))
    if d_optim_wrapper.should_update():
        d_optim_wrapper.zero_grad()
""", ((4, "GL102"),)),
    )


def _step_once(loop: TrainingLoop, step: Event) -> Change | None:
    """Move the step (and a per-micro-batch ``scaler.update()``) to the boundary, or remove
    them when the boundary already makes the same calls. A step under a condition of its
    own inside the micro-batch loop gets no fix (moving it alone would drop its guard)."""
    region = edit.update_region(loop)
    if region is None or edit.guarded(step):
        return None
    updates = [e for e in loop.of(Role.SCALER_UPDATE) if e.place is Place.MICRO]
    if edit.twins(loop, region, step):
        if updates:
            return Change(f"Remove {quoted(loop, step)} and {', '.join(quoted(loop, u) for u in updates)}: "
                          "the update boundary already steps and updates the scaler",
                          edit.remove_duplicate(loop, region, [step, *updates]))
        return Change(f"Remove {quoted(loop, step)}: the update boundary already steps this optimizer",
                      edit.remove_duplicate(loop, region, [step]))
    moved = sorted([step, *updates], key=lambda e: e.order)
    return Change(f"Move {quoted(loop, step)} to the update boundary",
                  edit.move(loop, moved, edit.canonical(loop, region, Role.STEP, moved)))
