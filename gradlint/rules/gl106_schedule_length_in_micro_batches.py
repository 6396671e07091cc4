"""GL106 schedule-length-in-micro-batches: an LR schedule sized in micro-batches, stepped per update."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from gradlint.catalogue import CATALOGUE
from gradlint.fixes import primitives as edit
from gradlint.model.constructions import Construction, construction_of
from gradlint.model.events import Event, Place, Role, Shape, TrainingLoop
from gradlint.model.syntax import dotted
from gradlint.rules.base import Change, Finding, Invalid, Rule
from gradlint.rules.readers import loader_of, unlinked_scheduler, unprepared_scheduler
from gradlint.schedule_lengths import length_specs
from gradlint.screen import ModuleFacts

_DEPTH = 4


class ScheduleLengthInMicroBatches(Rule):
    info = CATALOGUE["GL106"]

    def check(self, loop: TrainingLoop) -> Iterator[Finding]:
        if not loop.accumulating or loop.shape not in (Shape.GATED, Shape.ACCELERATE) or (n := _factor(loop)) is None:
            return
        if not isinstance(loop.root, cst.For) or (loader := loader_of(loop, loop.root)) is None:
            return
        seen: set[str] = set()
        for event in loop.of(Role.SCHEDULER_STEP):
            name = event.receiver
            if name is None or name in seen or event.metric or not _per_update(loop, event):
                continue
            seen.add(name)
            built = construction_of(loop.unit, name)
            if built is None or (built.unit is not loop.unit and not loader.startswith("self.")):
                continue  # another method's local `loader` is not the one this loop iterates
            for length in _length_arguments(built.call, built.unit.facts):
                found = _micro_batch_length(built, length, loader)
                if found is None:
                    continue
                fix = self.fix(_divide, loop, found, n) if built.unit is loop.unit else None
                yield Finding(built.unit.span(built.call), f"`{name}`'s length counts micro-batches but it steps once "
                              "per update; size it in updates", fix,
                              detail=f"`len({loader})` is not divided by the {n} micro-batches of an update, so the "
                              f"schedule runs only 1/{n} of its course; size it in updates: "
                              f"`math.ceil(len({loader}) / {n})`.")
                break

    VALID = (
        """\
import math

def train(model, loader, optimizer, epochs, accum_steps):
    updates = math.ceil(len(loader) / accum_steps) * epochs
    scheduler = get_linear_schedule_with_warmup(optimizer, 100, updates)
    for epoch in range(epochs):
        for step, (x, y) in enumerate(loader):
            (model(x, y) / accum_steps).backward()
            if (step + 1) % accum_steps == 0:
                optimizer.step()
                scheduler.step()
                optimizer.zero_grad()
""",
        """\
def train(model, loader, optimizer, total_steps, accum_steps):
    scheduler = OneCycleLR(optimizer, max_lr=0.1, total_steps=total_steps)
    for step, (x, y) in enumerate(loader):
        (model(x, y) / accum_steps).backward()
        if (step + 1) % accum_steps == 0:
            optimizer.step()
            scheduler.step()
            optimizer.zero_grad()
""",
    )
    INVALID = (
        Invalid("""\
import math

def train(model, loader, optimizer, epochs, accum_steps):
    total = len(loader) * epochs
    scheduler = get_linear_schedule_with_warmup(optimizer, 100, total)
    for epoch in range(epochs):
        for step, (x, y) in enumerate(loader):
            (model(x, y) / accum_steps).backward()
            if (step + 1) % accum_steps == 0:
                optimizer.step()
                scheduler.step()
                optimizer.zero_grad()
""", ((5, "GL106"),), fixed="""\
import math

def train(model, loader, optimizer, epochs, accum_steps):
    total = math.ceil(len(loader) / accum_steps) * epochs
    scheduler = get_linear_schedule_with_warmup(optimizer, 100, total)
    for epoch in range(epochs):
        for step, (x, y) in enumerate(loader):
            (model(x, y) / accum_steps).backward()
            if (step + 1) % accum_steps == 0:
                optimizer.step()
                scheduler.step()
                optimizer.zero_grad()
"""),
    )


def _per_update(loop: TrainingLoop, event: Event) -> bool:
    """The scheduler advances once per update: at the boundary, or as a prepared scheduler
    that Accelerate's ``accumulate()`` holds back (not when the Accelerator unlinks it from the
    optimizer)."""
    if event.place is Place.BOUNDARY:
        return True
    return loop.accelerate_skips(event) and not unprepared_scheduler(loop, event) and not unlinked_scheduler(loop, event)


def _length_arguments(call: cst.Call, facts: ModuleFacts) -> list[cst.BaseExpression]:
    """The arguments of a known schedule factory that count its length in scheduler steps; for
    a project function that returns one (``build_scheduler(opt, total)``), the arguments bound
    to the parameters it passes on as the length."""
    callee = dotted(call.func)
    specs = length_specs(callee)
    if not specs and callee in facts.schedule_factories:
        specs = facts.schedule_factories[callee]
    positional = [a.value for a in call.args if a.keyword is None and a.star == ""]
    found = []
    for keyword, index in specs:
        value = next((a.value for a in call.args if a.keyword is not None and a.keyword.value == keyword), None)
        if value is None and index is not None and index < len(positional):
            value = positional[index]
        if value is not None:
            found.append(value)
    return found


def _micro_batch_length(built: Construction, length: cst.BaseExpression, loader: str) -> cst.Call | None:
    """The ``len(<loader>)`` call a length is built from when nothing on the way divides it
    (by N or anything else), names the accumulation, or scales it by the process count;
    None when the length is sized otherwise or cannot be followed (a name assigned twice, a
    parameter)."""
    found: list[cst.Call] = []
    if not _follow(built, length, loader, found, _DEPTH) or len(found) != 1:
        return None
    return found[0]


def _follow(built: Construction, node: cst.BaseExpression, loader: str, found: list[cst.Call], depth: int) -> bool:
    """Walk ``node`` through single assignments of the construction's unit, collecting
    ``len(loader)`` calls; False as soon as something makes it not a micro-batch count (or
    unknowable)."""
    text = built.unit.text_of(node)
    if "/" in text or "accum" in text.lower() or "num_processes" in text or "world_size" in text:
        return False
    if isinstance(node, cst.Call):
        if dotted(node.func) == "len" and len(node.args) == 1 and dotted(node.args[0].value) == loader:
            found.append(node)
            return True
        return False
    if isinstance(node, (cst.Integer, cst.Float)):
        return True
    if isinstance(node, cst.BinaryOperation):
        if not isinstance(node.operator, (cst.Multiply, cst.Add, cst.Subtract)):
            return False
        return _follow(built, node.left, loader, found, depth) and _follow(built, node.right, loader, found, depth)
    name = dotted(node)
    if name is None:
        return False
    values = built.values(name)
    if not values or depth == 0:
        return True  # an epoch count or another factor from elsewhere
    return len(values) == 1 and _follow(built, values[0], loader, found, depth - 1)


def _factor(loop: TrainingLoop) -> str | None:
    """N as the loop shows it: the gate's modulus, or ``accelerator.gradient_accumulation_steps``
    under an ``accumulate()`` block of an Accelerator built to accumulate."""
    if loop.factor is not None:
        return edit.operand(loop, loop.factor)
    if loop.shape is Shape.ACCELERATE and loop.unit.facts.accelerator_accumulates:
        backward = next((e for e in loop.of(Role.BACKWARD) if loop.in_accumulate(e)), None)
        accelerator = loop.accumulating_accelerator(backward) if backward is not None else None
        return f"{accelerator}.gradient_accumulation_steps" if accelerator else None
    return None


def _divide(loop: TrainingLoop, length: cst.Call, n: str) -> Change | None:
    """Rewrite ``len(loader)`` as ``math.ceil(len(loader) / N)`` (unsafe: a schedule may be
    sized in micro-batches on purpose, or stepped elsewhere too)."""
    if loop.unit.facts.aliases.get("math") != "math":
        return None
    code = loop.unit.text_of(length).strip()
    return Change(f"Size the schedule in updates: `math.ceil({code} / {n})`",
                  edit.replace(loop, length, f"math.ceil({code} / {n})"))
