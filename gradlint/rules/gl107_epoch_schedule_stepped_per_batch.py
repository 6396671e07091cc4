"""GL107 epoch-schedule-stepped-per-batch: a schedule counted in epochs, stepped in the batch loop."""

from __future__ import annotations

import re
from collections.abc import Iterator

import libcst as cst

from gradlint.catalogue import CATALOGUE
from gradlint.fixes import edits
from gradlint.fixes.layout import layout_of
from gradlint.fixes.regions import after
from gradlint.model.constructions import Construction, construction_of
from gradlint.model.events import Event, Role, TrainingLoop
from gradlint.model.syntax import dotted, names_in
from gradlint.rules.base import Change, Finding, Invalid, Rule
from gradlint.rules.gl407_sampler_epoch_not_set import epoch_loop
from gradlint.rules.readers import call_text

_EPOCH_LENGTHS = {"StepLR": ("step_size", 1), "MultiStepLR": ("milestones", 1), "CosineAnnealingLR": ("T_max", 1)}
_PER_BATCH = re.compile(r"len\(|step|iter|batch|update", re.I)


class EpochScheduleSteppedPerBatch(Rule):
    info = CATALOGUE["GL107"]

    def check(self, loop: TrainingLoop) -> Iterator[Finding]:
        epochs = epoch_loop(loop)
        if epochs is None or not isinstance(loop.root, cst.For):
            return
        bound = _range_bound(epochs)
        if bound is None:
            return
        for event in loop.of(Role.SCHEDULER_STEP):
            if event.metric or event.unit is not loop.unit or event.receiver is None:
                continue
            built = construction_of(loop.unit, event.receiver)
            if built is None or (built.unit is not loop.unit and not bound.startswith("self.")):
                continue  # another method's local `epochs` is not this loop's bound
            length = _epoch_length(built, built.call)
            if length is None or bound not in _names_through(built, length):
                continue
            yield Finding(event.span, f"{call_text(loop, event)} steps an epoch-counted schedule on every batch; step "
                          "it once per epoch", self.fix(_after_batch_loop, loop, event, epochs),
                          detail=f"Its length is built from `{bound}`, so stepping it inside the batch loop decays "
                          "it len(loader) times too fast; step it once per epoch, after the batch loop.")

    VALID = (
        """\
def train(model, loader, optimizer, epochs):
    scheduler = StepLR(optimizer, step_size=epochs // 3)
    for epoch in range(epochs):
        for x, y in loader:
            model(x, y).backward()
            optimizer.step()
            optimizer.zero_grad()
        scheduler.step()
""",
        """\
def train(model, loader, optimizer, epochs):
    scheduler = CosineAnnealingLR(optimizer, T_max=epochs * len(loader))
    for epoch in range(epochs):
        for x, y in loader:
            model(x, y).backward()
            optimizer.step()
            optimizer.zero_grad()
            scheduler.step()
""",
    )
    INVALID = (
        Invalid("""\
def train(model, loader, optimizer, epochs):
    scheduler = CosineAnnealingLR(optimizer, T_max=epochs)
    for epoch in range(epochs):
        for x, y in loader:
            model(x, y).backward()
            optimizer.step()
            optimizer.zero_grad()
            scheduler.step()
""", ((8, "GL107"),), fixed="""\
def train(model, loader, optimizer, epochs):
    scheduler = CosineAnnealingLR(optimizer, T_max=epochs)
    for epoch in range(epochs):
        for x, y in loader:
            model(x, y).backward()
            optimizer.step()
            optimizer.zero_grad()
        scheduler.step()
"""),
    )


def _range_bound(epochs: cst.For) -> str | None:
    """``E`` in ``for epoch in range(E)`` (or ``range(start, E)``), as a dotted name."""
    source = epochs.iter
    if not (isinstance(source, cst.Call) and dotted(source.func) == "range" and 1 <= len(source.args) <= 2):
        return None
    return dotted(source.args[-1].value)


def _epoch_length(built: Construction, call: cst.Call) -> cst.BaseExpression | None:
    """The length argument of an epoch-counted scheduler constructor, unless it reads a
    per-batch quantity (``len(loader)``, a step or iteration count)."""
    last = (dotted(call.func) or "").rsplit(".", 1)[-1]
    if last not in _EPOCH_LENGTHS:
        return None
    keyword, index = _EPOCH_LENGTHS[last]
    value = next((a.value for a in call.args if a.keyword is not None and a.keyword.value == keyword), None)
    positional = [a.value for a in call.args if a.keyword is None and a.star == ""]
    if value is None and index < len(positional):
        value = positional[index]
    if value is None or _PER_BATCH.search(built.unit.text_of(value)):
        return None
    return value


def _names_through(built: Construction, value: cst.BaseExpression) -> set[str]:
    """Names ``value`` reads, also through names assigned once in the construction's unit (one
    level), unless one of those reads a per-batch quantity (then nothing)."""
    names = names_in(value)
    for name in list(names):
        values = built.values(name)
        bound = values[0] if len(values) == 1 else None
        if bound is not None:
            if _PER_BATCH.search(built.unit.text_of(bound)):
                return set()
            names |= names_in(bound)
    return names


def _after_batch_loop(loop: TrainingLoop, event: Event, epochs: cst.For) -> Change | None:
    """Move the scheduler step to just after the batch loop, in the epoch loop (unsafe: the
    schedule may have been meant per batch and sized wrongly instead). Not offered out of an
    ``accelerator.accumulate()`` block: the call would leave the context Accelerate steps it in."""
    if loop.in_accumulate(event) is not None:
        return None
    layout = layout_of(loop.unit)
    statement = edits.movable(loop, event)
    block = epochs.body
    if statement is None or not isinstance(block, cst.IndentedBlock) or layout.block_of(loop.root) is not block:
        return None
    moved = edits.move_statements(loop, [statement], after(layout, loop.root, block), ())
    return Change(f"Move `{call_text(loop, event)}` after the batch loop (once per epoch)", moved) if moved else None
