"""Small readers of the loop model that several rules (and their fixes) share."""

from __future__ import annotations

from typing import TYPE_CHECKING

import libcst as cst

from gradlint.model.events import Event, Place, Role, TrainingLoop
from gradlint.model.loss import Scaling
from gradlint.model.syntax import dotted, first_arg
from gradlint.names import Kind

if TYPE_CHECKING:
    from gradlint.model.unit import UnitModel

_WRAPPERS = frozenset({"enumerate", "tqdm", "tqdm.tqdm", "tqdm.auto.tqdm"})

OWN_STEP = "its optimizer's step"
"""How a message names the step an event goes with when the loop does not tell which it is."""


def call_text(loop: TrainingLoop, event: Event) -> str:
    """How the user wrote the call, for messages: ``optimizer.step()``."""
    node = event.node
    if isinstance(node, cst.Call):
        return loop.unit.text_of(node.func).strip() + "()"
    if isinstance(node, cst.For):  # its header, without the comment that may end the line
        return f"for {loop.unit.text_of(node.target).strip()} in {loop.unit.text_of(node.iter).strip()}:"
    return loop.unit.text_of(node).strip().splitlines()[0]


def quoted(loop: TrainingLoop, event: Event) -> str:
    """The call as written, in backticks, for fix messages."""
    return f"`{call_text(loop, event)}`"


def steps_of(loop: TrainingLoop) -> list[Event]:
    """The loop's optimizer steps, without closure steps (LBFGS runs its own backward)."""
    return [e for e in loop.of(Role.STEP) if not e.closure]


def update_steps(loop: TrainingLoop) -> list[Event]:
    """The steps of :func:`steps_of` that the loop's own code owns (not a DeepSpeed engine's)."""
    return [e for e in steps_of(loop) if not e.engine_owned]


def sole_step(loop: TrainingLoop) -> Event | None:
    """The loop's one optimizer step (None with several optimizers or none)."""
    steps = steps_of(loop)
    return steps[0] if len(steps) == 1 else None


def paired_step(loop: TrainingLoop, event: Event) -> Event | None:
    """The optimizer step that ``event`` goes with, paired by receiver: for an optimizer's
    ``zero_grad`` the step of that optimizer; for a scheduler the step of the optimizer its
    constructor was given; for anything else (a model's ``zero_grad``, a clip) and for a
    scheduler of unknown origin, the step of the loop's only optimizer. None when the loop's
    steps leave it open (several optimizers) or none matches."""
    steps = update_steps(loop)
    if event.role is Role.ZERO_GRAD and event.kind is Kind.OPTIMIZER:
        return next((s for s in steps if s.target == event.receiver), None)
    optimizer = scheduled_optimizer(loop, event) if event.role is Role.SCHEDULER_STEP else None
    if optimizer is not None:
        return next((s for s in steps if s.target == optimizer), None)
    return steps[0] if steps and len({s.target for s in steps}) == 1 else None


def scheduled_optimizer(loop: TrainingLoop, scheduler: Event) -> str | None:
    """The optimizer (as written) that the scheduler of ``scheduler`` was built on, when the
    unit's or the module's assignments say (``sched_d = StepLR(opt_d, 10)``)."""
    name = scheduler.receiver
    if name is None:
        return None
    value = loop.unit.single_value(name)
    if isinstance(value, cst.Call):
        keyword = next((a.value for a in value.args if a.keyword is not None and a.keyword.value == "optimizer"), None)
        positional = [a.value for a in value.args if a.keyword is None and not a.star]
        for arg in [keyword] if keyword is not None else positional:
            written = dotted(arg)
            if written is not None and loop.unit.facts.kind_of(written) is Kind.OPTIMIZER:
                return written
    return loop.unit.facts.schedules.get(name)


def paired_step_text(loop: TrainingLoop, event: Event, fallback: str) -> str:
    """The step ``event`` goes with, as written, else ``fallback``."""
    step = paired_step(loop, event)
    return call_text(loop, step) if step is not None else fallback


def scaler_unscale(loop: TrainingLoop, step: Event | None = None) -> str | None:
    """``scaler.unscale_(optimizer)`` as the loop would write it, for ``step`` (default: the
    loop's only step) when that is a GradScaler's ``scaler.step(optimizer)``."""
    step = step or sole_step(loop)
    if step is None or step.kind is not Kind.SCALER or not isinstance(step.node, cst.Call):
        return None
    optimizer = first_arg(step.node)
    if optimizer is None or not isinstance(step.node.func, cst.Attribute):
        return None
    scaler = loop.unit.text_of(step.node.func.value).strip()
    return f"{scaler}.unscale_({loop.unit.text_of(optimizer).strip()})"


def deepspeed_divisor(unit: UnitModel, node: cst.BaseExpression) -> bool:
    """A divisor read from the DeepSpeed configuration (``accelerator.state.deepspeed_plugin
    .deepspeed_config["gradient_accumulation_steps"]``): under DeepSpeed, ``accelerator.backward``
    hands the loss to the engine, whose backward divides by that same factor."""
    name = dotted(node)
    values = unit.bound_values(name) if name is not None else []
    return any("deepspeed" in unit.text_of(value).lower() for value in values)


def engine_loop(loop: TrainingLoop) -> bool:
    """A DeepSpeed loop: the engine owns the boundary, the scaling and the clipping."""
    return any(e.role is Role.BACKWARD and e.engine_owned for e in loop.events)


def on_engine_path(loop: TrainingLoop, event: Event) -> bool:
    """A DeepSpeed engine's backward runs on ``event``'s path: the engine owns the boundary,
    scaling and clipping there. A branch the engine's backward is not in (``if
    using_deepspeed(): engine.backward(loss) else: loss.backward()``, tested again at the
    update) is a plain torch path."""
    return any(e.role is Role.BACKWARD and e.engine_owned and not loop.exclusive(e, event) for e in loop.events)


def per_micro_batch(loop: TrainingLoop, role: Role) -> list[Event]:
    """Events of ``role`` that run once per micro-batch of an accumulation window."""
    if not loop.accumulating:
        return []
    return [e for e in loop.of(role) if e.place is Place.MICRO and not e.engine_owned and not e.closure
            and not on_engine_path(loop, e)]


def backward_before(loop: TrainingLoop, event: Event) -> Event | None:
    """The last backward call before ``event`` on the same path through the loop body."""
    found = [e for e in loop.of(Role.BACKWARD) if loop.flows(e, event)]
    return found[-1] if found else None


def last_backwards(loop: TrainingLoop, event: Event) -> list[Event]:
    """Each backward call that is the last one before ``event`` on some path through the
    iteration (one per arm when ``if amp: scaled backward`` / ``else: backward``)."""
    before = [b for b in loop.of(Role.BACKWARD) if loop.flows(b, event)]
    return [b for b in before if not any(loop.flows(b, later) for later in before)]


def scaled_backwards(loop: TrainingLoop) -> list[Event]:
    """Per-micro-batch backward calls whose loss the loop divides itself (not a framework)."""
    return [e for e in per_micro_batch(loop, Role.BACKWARD)
            if not e.framework_divides and e.loss_trace.scaling is Scaling.SCALED]


def unprepared_scheduler(loop: TrainingLoop, event: Event) -> bool:
    """A scheduler the module builds itself (a known constructor) and never hands to
    ``accelerator.prepare``: Accelerate's ``accumulate()`` does not hold its steps back.
    Unknown origins (a parameter, an unpacked ``prepare(*objects)``) are not."""
    facts, name = loop.unit.facts, event.receiver
    if event.kind is not Kind.SCHEDULER or not name or "*" in facts.prepared:
        return False
    last = name.rsplit(".", 1)[-1]
    if any(p.rsplit(".", 1)[-1] == last for p in facts.prepared):
        return False
    return facts.bindings.get(name, facts.bindings.get(last)) is Kind.SCHEDULER


def unlinked_scheduler(loop: TrainingLoop, event: Event) -> str | None:
    """The accelerator, as written, when ``event`` steps a scheduler inside the ``accumulate()``
    of an Accelerator the module builds with ``step_scheduler_with_optimizer=False``: its
    prepared schedulers then step on every call, so there on every micro-batch."""
    if event.kind is not Kind.SCHEDULER or event.role is not Role.SCHEDULER_STEP:
        return None
    accelerator = loop.accumulating_accelerator(event)
    return accelerator if accelerator and loop.unit.facts.unlinked_accelerators.get(accelerator) else None


def loader_of(loop: TrainingLoop, root: cst.For) -> str | None:
    """The loader a ``for`` iterates, as written, through ``enumerate`` and ``tqdm`` (also a
    progress bar assigned once: ``pbar = tqdm(loader)``)."""
    source: cst.BaseExpression = root.iter
    for _ in range(2):  # `enumerate(pbar)` with `pbar = tqdm(loader)`
        while isinstance(source, cst.Call) and dotted(source.func) in _WRAPPERS and source.args:
            source = source.args[0].value
        name = dotted(source)
        bound = loop.unit.single_value(name) if name else None
        if not (isinstance(bound, cst.Call) and dotted(bound.func) in _WRAPPERS):
            break
        source = bound
    return dotted(source)
