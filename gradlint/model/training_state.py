"""Training state around a loop: where its GradScaler is built, and what its checkpoints save
and restore.

These readers look at the unit that holds a training loop (the function around it), since a
scaler built once before the loop, or a checkpoint written after it, lives there and not in
the loop's events. Rules read them; they never walk syntax themselves.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import libcst as cst

from gradlint.model.events import Event, Role, TrainingLoop
from gradlint.model.node_memo import per_node
from gradlint.model.preorder import preorder
from gradlint.model.syntax import dotted, first_arg, is_lr_target, names_in
from gradlint.names import Kind, counts_updates

_SCALER_CLASSES = frozenset({"GradScaler", "ShardedGradScaler"})
_REPEATS = (cst.For, cst.While)
_SCOPES = (cst.FunctionDef, cst.Lambda, cst.ClassDef)


@dataclass(frozen=True)
class ScalerConstruction:
    """A ``GradScaler(...)`` call that runs again on every pass of ``repeat``."""

    call: cst.Call
    statement: cst.SimpleStatementLine | None  # its own line (``scaler = GradScaler()``), if alone on it
    repeat: cst.CSTNode  # the outermost loop (or per-batch function) that repeats it
    reads_loop_names: bool  # its arguments read a name the repeating loop binds


def _callee(call: cst.Call) -> str:
    return dotted(call.func) or ""


def _loop_ancestors(loop: TrainingLoop) -> list[cst.CSTNode]:
    """The ``for``/``while`` statements of the loop's unit around its own events (the loop
    itself and the epoch loops outside it)."""
    for event in loop.events:
        if event.unit is loop.unit and event.inside(loop.root):
            return [a for a in event.ancestors if isinstance(a, _REPEATS)]
    return []


def scaler_constructions(loop: TrainingLoop) -> list[ScalerConstruction]:
    """GradScalers the loop's unit builds inside the loop (or an epoch loop around it, a
    per-batch function that is the loop, or anywhere in a per-epoch function such as
    ``train_one_epoch``). Skipped: a construction inside a nested function, one
    under an ``if`` that tests the scaler itself or compares a loop variable for equality
    (``if scaler is None:``, ``if step == 0:``: built once), and ``GradScaler(enabled=False)``."""
    repeats = _loop_ancestors(loop)
    per_batch_function = not isinstance(loop.root, _REPEATS)
    per_epoch_function = "epoch" in loop.unit.unit.name.lower()
    found: list[ScalerConstruction] = []
    order = preorder(loop.unit.root)
    for index, node in enumerate(order.nodes):
        if not isinstance(node, cst.Call) or _callee(node).rsplit(".", 1)[-1] not in _SCALER_CLASSES:
            continue
        ancestors = order.ancestors(index)
        inner = ancestors[1:] if ancestors and ancestors[0] is loop.unit.root else ancestors
        if any(isinstance(a, _SCOPES) and a is not loop.root for a in inner) or _disabled(node):
            continue
        outer = [a for a in ancestors if any(a is r for r in repeats)]
        if outer:
            repeat: cst.CSTNode = outer[0]
        elif per_batch_function and any(a is loop.root for a in ancestors):
            repeat = loop.root
        elif per_epoch_function and isinstance(loop.unit.root, cst.FunctionDef):
            repeat = loop.unit.root  # a `train_one_epoch` function: called once per epoch
        else:
            continue
        below = ancestors[[i for i, a in enumerate(ancestors) if a is repeat][0]:]
        statement = next((a for a in reversed(ancestors) if isinstance(a, cst.SimpleStatementLine)), None)
        target = _assigned(statement, node)
        loop_names = _bound_in(loop, repeat)
        if any(isinstance(a, cst.If) and _built_once_test(a.test, target, loop_names) for a in below):
            continue
        reads = bool(names_in(node) - {_callee(node)} & loop_names) or any(
            n.split(".", 1)[0] in loop_names for n in names_in(node) if n != _callee(node))
        alone = statement if statement is not None and len(statement.body) == 1 and target else None
        found.append(ScalerConstruction(node, alone, repeat, reads))
    return found


def _disabled(call: cst.Call) -> bool:
    return any(a.keyword is not None and a.keyword.value == "enabled" and isinstance(a.value, cst.Name)
               and a.value.value == "False" for a in call.args)


def _assigned(statement: cst.SimpleStatementLine | None, call: cst.Call) -> str | None:
    """The name ``call`` is assigned to on its own line (``scaler = GradScaler()``)."""
    if statement is None or len(statement.body) != 1:
        return None
    small = statement.body[0]
    if isinstance(small, cst.Assign) and small.value is call and len(small.targets) == 1:
        return dotted(small.targets[0].target)
    if isinstance(small, cst.AnnAssign) and small.value is call:
        return dotted(small.target)
    return None


def _built_once_test(test: cst.BaseExpression, target: str | None, loop_names: set[str]) -> bool:
    """A test that lets the construction run once: it reads the scaler itself (``if scaler is
    None:``), or compares a name the loop binds for equality (``if step == 0:``)."""
    if target is not None and target in names_in(test):
        return True
    found = False

    class _Equality(cst.CSTVisitor):
        def visit_Comparison(self, node: cst.Comparison) -> None:
            nonlocal found
            equality = any(isinstance(t.operator, (cst.Equal, cst.Is)) for t in node.comparisons)
            found = found or (equality and bool({n.split(".", 1)[0] for n in names_in(node)} & loop_names))

    test.visit(_Equality())
    return found


def _bound_in(loop: TrainingLoop, repeat: cst.CSTNode) -> set[str]:
    """Names a ``for`` target or an assignment inside ``repeat`` binds."""
    span = loop.unit.span(repeat)
    names = {name for name, places in loop.unit.assignments.items()
             if any(span.line <= line <= span.end_line for line, _ in places)}
    for node in preorder(repeat).nodes:
        if isinstance(node, cst.For):
            names |= names_in(node.target)
        elif isinstance(node, cst.FunctionDef) and node is repeat:
            names |= {p.name.value for p in node.params.params}
    return names


def mentions(text: str, name: str) -> bool:
    """Whether ``name`` (dotted) occurs in ``text`` as a whole name."""
    return re.search(rf"(?<![\w.]){re.escape(name)}(?!\w)", text) is not None


def stepped_state(loop: TrainingLoop) -> list[tuple[str, str]]:
    """``(receiver, what)`` of the schedulers and GradScalers the loop steps, as written
    (``what`` is ``"scheduler"`` or ``"scaler"``; a scaler built with ``enabled=False`` has no
    state and is left out): in the loop's own unit, or on ``self`` in a method of the same
    object that the loop calls (``self.scaler.update()`` in ``self.backward_step()``)."""
    found: dict[str, str] = {}
    for event in loop.events:
        receiver = _receiver(event)
        if receiver is None or not _same_object(loop, event, receiver):
            continue
        if event.role is Role.SCHEDULER_STEP and event.kind is Kind.SCHEDULER:
            found.setdefault(receiver, "scheduler")
        elif event.kind is Kind.SCALER and event.role in (Role.STEP, Role.SCALER_UPDATE) \
                and receiver not in event.unit.facts.disabled_scalers:
            found.setdefault(receiver, "scaler")
    return list(found.items())


def optimizers_stepped(loop: TrainingLoop) -> set[str]:
    """The optimizers the loop steps, as written (``scaler.step(opt)`` steps ``opt``), in its
    own unit or on ``self`` in a method of the same object."""
    found: set[str] = set()
    for event in loop.of(Role.STEP):
        if event.kind is Kind.SCALER and isinstance(event.node, cst.Call):
            name = dotted(first_arg(event.node))
        else:
            name = _receiver(event)
        if name and _same_object(loop, event, name):
            found.add(name)
    return found


def _same_object(loop: TrainingLoop, event: Event, receiver: str) -> bool:
    """The event's receiver names the same object in the loop's unit: the unit is the loop's, or
    a method of the loop's class that the loop calls and the receiver is on ``self``."""
    if event.unit is loop.unit:
        return True
    own = loop.unit.unit.class_name
    return own is not None and event.unit.unit.class_name == own and receiver.startswith("self.")


def _receiver(event: Event) -> str | None:
    node = event.receiver_node
    return dotted(node) if node is not None else None


def update_counters(loop: TrainingLoop) -> list[str]:
    """Counters of optimizer updates that are clocks of the training (:func:`_clock_names`: an LR
    computed from them, a scheduler stepped with them, a step budget that ends the loop) and keep
    counting across epochs, as written: a ``+= 1`` named for updates (``global_step``,
    ``self.iteration``) in the loop's own unit that no plain assignment inside the outermost
    loop resets. A resumed run that does not restore one restarts these clocks (an eval or
    logging cadence that restarts is harmless and is not asked for)."""
    repeats = _loop_ancestors(loop)
    outer = loop.unit.span(repeats[0]) if repeats else loop.span
    clocks = _clock_names(loop.unit.root) | {
        n for e in loop.of(Role.SCHEDULER_STEP) if e.unit is loop.unit for n in names_in(e.node) - {e.receiver}}
    found: list[str] = []
    for event in loop.of(Role.COUNTER):
        name = event.receiver
        if not name or name in found or name not in clocks or not counts_updates(name) \
                or event.unit is not loop.unit:
            continue
        if not any(outer.line <= line <= outer.end_line and not isinstance(value, cst.AugAssign)
                   for line, value in loop.unit.assignments.get(name, [])):
            found.append(name)
    return found


@per_node
def _clock_names(root: cst.CSTNode) -> frozenset[str]:
    """Names read by an LR assignment (``group["lr"] = lr_at(step)``, ``optimizer.lr = ...``),
    by the test of a ``while``, or by the test of an ``if`` whose body ends the loop or the
    function (``if step >= max_steps: break``)."""
    found: set[str] = set()
    for node in preorder(root).nodes:
        if isinstance(node, cst.Assign):
            if any(is_lr_target(t.target) for t in node.targets):
                found.update(names_in(node.value))
        elif isinstance(node, cst.While):
            found.update(names_in(node.test))
        elif isinstance(node, cst.If):
            body = node.body.body if isinstance(node.body, cst.IndentedBlock) else ()
            if any(isinstance(line, cst.SimpleStatementLine) and any(isinstance(s, (cst.Break, cst.Return))
                                                                     for s in line.body) for line in body):
                found.update(names_in(node.test))
    return frozenset(found)

