"""GL101 clip-per-micro-batch: gradient clipping on every micro-batch of a window."""

from __future__ import annotations

from collections.abc import Iterator

from gradlint.catalogue import CATALOGUE
from gradlint.fixes import primitives as edit
from gradlint.model.events import Event, Place, Role, TrainingLoop
from gradlint.names import Kind
from gradlint.rules.base import Change, Finding, Invalid, Rule
from gradlint.rules.readers import (
    call_text,
    paired_step_text,
    per_micro_batch,
    quoted,
    scaler_unscale,
    sole_step,
    steps_of,
)


class ClipPerMicroBatch(Rule):
    info = CATALOGUE["GL101"]

    def check(self, loop: TrainingLoop) -> Iterator[Finding]:
        for event in per_micro_batch(loop, Role.CLIP):
            where = ("under `if accelerator.sync_gradients:`" if loop.in_accumulate(event)
                     else f"just before {paired_step_text(loop, event, 'the optimizer step')}")
            yield Finding(event.span, f"{call_text(loop, event)} runs on every micro-batch; clip once, {where}",
                          self.fix(_clip_once, loop, event),
                          detail="Clipping inside the accumulation window rescales a partly accumulated gradient on "
                          "each micro-batch, so the step never uses the accumulated gradient clipped once.")

    VALID = (
        """\
def train(model, loader, optimizer, accum_steps):
    for step, (x, y) in enumerate(loader):
        (model(x, y) / accum_steps).backward()
        if (step + 1) % accum_steps == 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            optimizer.zero_grad()
""",
        """\
def train(model, loader, optimizer):
    for x, y in loader:
        model(x, y).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad()
""",
    )
    INVALID = (
        Invalid("""\
def train(model, loader, optimizer, accum_steps):
    for step, (x, y) in enumerate(loader):
        (model(x, y) / accum_steps).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        if (step + 1) % accum_steps == 0:
            optimizer.step()
            optimizer.zero_grad()
""", ((4, "GL101"),), fixed="""\
def train(model, loader, optimizer, accum_steps):
    for step, (x, y) in enumerate(loader):
        (model(x, y) / accum_steps).backward()
        if (step + 1) % accum_steps == 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            optimizer.zero_grad()
"""),
        Invalid("""\
def train(model, loader, optimizer, accelerator):
    for batch in loader:
        with accelerator.accumulate(model):
            accelerator.backward(model(**batch).loss)
            accelerator.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            optimizer.zero_grad()
""", ((5, "GL101"),), fixed="""\
def train(model, loader, optimizer, accelerator):
    for batch in loader:
        with accelerator.accumulate(model):
            accelerator.backward(model(**batch).loss)
            if accelerator.sync_gradients:
                accelerator.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            optimizer.zero_grad()
"""),
    )


def _clip_once(loop: TrainingLoop, clip: Event) -> Change | None:
    """Move the clip to the boundary, after ``scaler.unscale_`` (added when a GradScaler
    steps and none exists, under the step's own guard) and just before the step, or remove
    it when the boundary already clips; inside ``accelerator.accumulate()``, put it under
    ``if accelerator.sync_gradients:``."""
    if loop.in_accumulate(clip) is not None:
        accelerator = clip.receiver if clip.framework == "accelerate" else loop.accumulating_accelerator(clip)
        if accelerator is None:
            return None
        header = f"if {accelerator}.sync_gradients:"
        return Change(f"Clip only when gradients are synchronized (`{header}`)", edit.wrap(loop, clip, header))
    region = edit.update_region(loop)
    steps = steps_of(loop)
    if region is None or not steps or not all(edit.in_region(loop, region, s) for s in steps):
        return None
    if any(s.kind is Kind.SCALER for s in steps) and sole_step(loop) is None:
        return None  # which optimizer to unscale (and whether a scaler exists) is a guess
    unscales = [e for e in loop.of(Role.UNSCALE) if e.place is Place.MICRO and e.order < clip.order]
    if edit.twins(loop, region, clip):
        if unscales:
            return None  # the per-micro-batch unscale would stay behind
        return Change(f"Remove {quoted(loop, clip)}: the update boundary already clips the gradients",
                      edit.remove_duplicate(loop, region, [clip]))
    at_boundary = any(edit.in_region(loop, region, e) for e in loop.of(Role.UNSCALE))
    moved = [*unscales, clip]
    spot = edit.canonical(loop, region, Role.CLIP, moved)
    unscale = scaler_unscale(loop)
    step = sole_step(loop)
    new_lines: list[str] | None = []
    if unscale and step is not None and not unscales and not at_boundary:
        new_lines = edit.guarded_code(loop, step, spot, unscale)  # guarded like the scaler's step
    if new_lines is None:
        return None
    what = "unscale and clip" if new_lines or unscales else "clip"
    return Change(f"Move {quoted(loop, clip)} to the update boundary ({what} once, just before the step)",
                  edit.move(loop, moved, spot, new_lines))
