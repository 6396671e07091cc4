"""GL402 unsynced-accumulation: DDP accumulation that all-reduces every micro-batch."""

from __future__ import annotations

import ast
from collections.abc import Iterator, Sequence

import libcst as cst

from gradlint.catalogue import CATALOGUE
from gradlint.model.events import Role, Shape, TrainingLoop
from gradlint.names import Kind
from gradlint.project.callers import passed_kinds
from gradlint.project.context import ProjectContext
from gradlint.rules.base import Finding, Invalid, ModuleRule
from gradlint.rules.readers import call_text, per_micro_batch


class UnsyncedAccumulation(ModuleRule):
    """Read per loop (a model the module shows to be DDP) and per module (a model a visible
    caller in a sibling module wraps in DDP and passes in)."""

    info = CATALOGUE["GL402"]
    words = ("backward",)

    def check(self, loop: TrainingLoop) -> Iterator[Finding]:
        if loop.sync_controlled or loop.unit.unit.name in loop.unit.facts.guarded_callees:
            return  # the loop's function is called inside a sync guard: the caller guards its forward
        if loop.unit.facts.wrapped_models and loop.shape is not Shape.ACCELERATE:
            yield from _prepared_by_hand(loop)
        if Kind.DDP_MODEL not in loop.unit.facts.bindings.values() and not _unused_guard(loop):
            return  # no model known to be DistributedDataParallel
        yield from _unsynced(loop, own_unit_only=False)

    def check_module(self, tree: ast.Module, lines: list[str], loops: Sequence[TrainingLoop] = (),
                     project: ProjectContext | None = None) -> Iterator[Finding]:
        if project is None:
            return
        for loop in loops:
            unit = loop.unit
            if (loop.sync_controlled or unit.unit.class_name is not None or unit.unit.name in unit.facts.guarded_callees
                    or Kind.DDP_MODEL in unit.facts.bindings.values() or _unused_guard(loop)):
                continue  # a method, a guarded or a visibly DDP loop: read per loop
            found = list(_unsynced(loop, own_unit_only=True))
            if found and _ddp_passed_in(loop, tree, project):  # the callers are read only for a reportable loop
                yield from found

    VALID = (
        """\
def train(model, loader, optimizer, accelerator, accum_steps):
    model, optimizer = accelerator.prepare(model, optimizer)
    for step, (x, y) in enumerate(loader):
        with accelerator.accumulate(model):
            accelerator.backward(model(x, y))
            optimizer.step()
            optimizer.zero_grad()
""",
        """\
def train(model, loader, optimizer, fabric, accum_steps):
    model, optimizer = fabric.setup(model, optimizer)
    for step, (x, y) in enumerate(loader):
        is_accumulating = (step + 1) % accum_steps != 0
        with fabric.no_backward_sync(model, enabled=is_accumulating):
            fabric.backward(model(x, y) / accum_steps)
        if not is_accumulating:
            optimizer.step()
            optimizer.zero_grad()
""",
        """\
def train(model, loader, optimizer, accum_steps):
    model = DistributedDataParallel(model)
    for step, (x, y) in enumerate(loader):
        if (step + 1) % accum_steps != 0:
            with model.no_sync():
                (model(x, y) / accum_steps).backward()
            continue
        (model(x, y) / accum_steps).backward()
        optimizer.step()
        optimizer.zero_grad()
""",
    )
    INVALID = (
        Invalid("""\
def train_step(model, samples, optimizer):
    model = DistributedDataParallel(model)
    try:
        for sample in samples:
            model(sample).backward()
        optimizer.step()
        optimizer.zero_grad()
    except FloatingPointError:
        optimizer.zero_grad()
        for sample in samples:
            model(sample).backward()
        raise
""", ((5, "GL402"),)),
        Invalid("""\
def train(model, loader, optimizer, accum_steps):
    model = DistributedDataParallel(model)
    for step, (x, y) in enumerate(loader):
        (model(x, y) / accum_steps).backward()
        if (step + 1) % accum_steps == 0:
            optimizer.step()
            optimizer.zero_grad()
""", ((4, "GL402"),)),
        Invalid("""\
def train(model, get_batch, optimizer, accelerator, num_updates, accum_steps):
    model, optimizer = accelerator.prepare(model, optimizer)
    for update in range(num_updates):
        for _ in range(accum_steps):
            accelerator.backward(model(*get_batch()) / accum_steps)
        optimizer.step()
        optimizer.zero_grad()
""", ((5, "GL402"),)),
    )


def _unsynced(loop: TrainingLoop, own_unit_only: bool) -> Iterator[Finding]:
    """The loop's micro-batch backwards outside every sync guard (only those written in the
    loop's own function, when ``own_unit_only``: a helper's backward is then not reported)."""
    for event in per_micro_batch(loop, Role.BACKWARD):
        if event.no_sync or event.framework in ("accelerate", "fabric", "deepspeed"):
            continue
        if any(isinstance(a, cst.ExceptHandler) for a in event.ancestors):
            continue  # a re-run after a failure (NaN detection, out of memory): not the window's own pass
        if own_unit_only and event.unit is not loop.unit:
            continue
        yield Finding(event.span, "this backward all-reduces on every micro-batch of a DDP window; use "
                      "`with model.no_sync():`", detail="It runs outside model.no_sync(); run the forward and "
                      "backward of all but the last micro-batch under `with model.no_sync():`.")


def _ddp_passed_in(loop: TrainingLoop, tree: ast.Module, project: ProjectContext) -> bool:
    """A parameter of the loop's module function that the loop calls (its forward) and that a
    caller in a sibling module passes a DistributedDataParallel model (``train_one_epoch(model,
    ...)`` after ``model = DDP(model)`` in ``main``)."""
    name, line = loop.unit.unit.name, loop.unit.unit.start_line
    function = next((n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                     and n.name == name and n.lineno <= line <= (n.end_lineno or n.lineno)), None)
    if function is None:
        return False
    arguments = function.args
    parameters = [a.arg for a in (*arguments.posonlyargs, *arguments.args)] + [a.arg for a in arguments.kwonlyargs]
    text = loop.unit.text_of(loop.root)
    called = [p for p in parameters if f"{p}(" in text]
    if not called:
        return False
    kinds = passed_kinds(project, project.path, name, parameters)
    return any(Kind.DDP_MODEL in kinds.get(p, set()) for p in called)


def _unused_guard(loop: TrainingLoop) -> bool:
    """The loop, or the function its micro-batch backward runs in, reads a model's ``no_sync``
    (so the model is DDP or FSDP) without entering it around that backward:
    ``ctx = self.dist_model.no_sync`` left unused. A guard in a caller of the loop's function
    (``run_optimizer(loss)`` receiving a loss whose forward the caller guarded) is not seen here."""
    models = loop.unit.facts.sync_models
    texts = [loop.unit.text_of(loop.root)] + [e.unit.text_of(e.unit.root) for e in loop.of(Role.BACKWARD)
                                              if e.unit is not loop.unit]
    return any(f"{model}.no_sync" in text for model in models for text in texts)


def _prepared_by_hand(loop: TrainingLoop) -> Iterator[Finding]:
    """A model prepared by Accelerate (or set up by Fabric), which wraps it in DDP on several
    processes, accumulated by hand: ``accelerator.backward`` / ``fabric.backward`` per
    micro-batch outside ``accumulate()`` and ``no_backward_sync()``."""
    unit = loop.unit
    if "deepspeed" in unit.text_of(unit.root).lower() or any("deepspeed" in q for q in unit.facts.aliases.values()):
        return  # under a DeepSpeed plugin the prepared model is an engine, which owns the window and its sync
    for event in per_micro_batch(loop, Role.BACKWARD):
        if event.no_sync or event.framework not in ("accelerate", "fabric"):
            continue
        guard = "accelerator.accumulate(model)" if event.framework == "accelerate" else (
            "fabric.no_backward_sync(model, enabled=is_accumulating)")
        yield Finding(event.span, f"{call_text(loop, event)} all-reduces on every micro-batch of this hand-made "
                      "window; add a sync guard", detail=f"The model is prepared by {event.framework.capitalize()} "
                      "(DistributedDataParallel on several processes) and nothing guards the sync; run the "
                      f"micro-batch forward and backward under `with {guard}:`.")
