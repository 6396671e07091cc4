"""GL405 sync-on-wrong-micro-batch: a DDP sync guard whose condition is inverted or off by one."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from gradlint.catalogue import CATALOGUE
from gradlint.diagnostics import Span
from gradlint.model.events import Role, TrainingLoop
from gradlint.model.gate_tests import GateTest, read_gate
from gradlint.model.syntax import dotted
from gradlint.rules.base import Finding, Invalid, Rule
from gradlint.rules.gl404_sync_guard_misses_forward import guard_of, is_guard
from gradlint.sync_facts import GUARD_ATTRS

_ADVICE = "sync only on the last micro-batch of the window"
_DETAIL = ("The boundary micro-batch's backward skips the all-reduce while the others synchronise: ranks step "
           "on gradients that were never averaged and their replicas drift apart; skip the sync on every "
           "micro-batch except the last of the window.")


class SyncOnWrongMicroBatch(Rule):
    info = CATALOGUE["GL405"]

    def check(self, loop: TrainingLoop) -> Iterator[Finding]:
        if not loop.accumulating or not loop.single_unit:
            return
        counters = _counters(loop)
        reported: set[int] = set()
        for backward in loop.of(Role.BACKWARD):
            guard = guard_of(loop.unit, loop.root, backward) or _chosen_guard(loop, backward.ancestors)
            if guard is None or id(guard) in reported:
                continue
            found = _guard_wrong(loop, guard, counters)
            if found is not None:
                wrong, chosen = found
                reported.add(id(guard))
                start, end = (loop.unit.span(guard), loop.unit.span(guard.items[-1])) if chosen is None else (
                    loop.unit.span(chosen), loop.unit.span(chosen))
                yield Finding(Span(start.line, start.column, end.end_line, end.end_column),
                              f"this sync guard {wrong}; {_ADVICE}", detail=_DETAIL)
        for toggle in loop.of(Role.SYNC_TOGGLE):
            value = toggle.node.value if isinstance(toggle.node, cst.Assign) else None
            test = _reading(loop, value, counters) if value is not None else None
            if test is not None and (not test.update_when or _first_micro_batch(test)):
                yield Finding(toggle.span, f"`require_backward_grad_sync` is true on the wrong micro-batch; {_ADVICE}",
                              detail=_DETAIL)

    VALID = (
        """\
def train(model, loader, optimizer, accum_steps):
    for step, (x, y) in enumerate(loader):
        boundary = (step + 1) % accum_steps == 0
        with contextlib.nullcontext() if boundary else model.no_sync():
            (model(x, y) / accum_steps).backward()
        if boundary:
            optimizer.step()
            optimizer.zero_grad()
""",
        """\
def train(model, get_batch, optimizer, num_updates, accum_steps):
    for update in range(num_updates):
        for micro_step in range(accum_steps):
            model.require_backward_grad_sync = micro_step == accum_steps - 1
            (model(*get_batch()) / accum_steps).backward()
        optimizer.step()
        optimizer.zero_grad()
""",
    )
    INVALID = (
        Invalid("""\
def train(model, loader, optimizer, accum_steps):
    for step, (x, y) in enumerate(loader):
        boundary = (step + 1) % accum_steps == 0
        with model.no_sync() if boundary else contextlib.nullcontext():
            (model(x, y) / accum_steps).backward()
        if boundary:
            optimizer.step()
            optimizer.zero_grad()
""", ((4, "GL405"),)),
        Invalid("""\
def train(model, get_batch, optimizer, num_updates, accum_steps):
    for update in range(num_updates):
        for micro_step in range(accum_steps):
            model.require_backward_grad_sync = micro_step == 0
            (model(*get_batch()) / accum_steps).backward()
        optimizer.step()
        optimizer.zero_grad()
""", ((4, "GL405"),)),
    )


def _counters(loop: TrainingLoop) -> set[str]:
    """Names that count micro-batches: the gates' counters and the targets of the loop's ``for``
    headers (``for micro_step in range(N)``, ``for i, batch in enumerate(loader)``)."""
    names = {g.counter for g in loop.gates if g.counter}
    for node in [loop.root, *loop.micro_loops]:
        if isinstance(node, cst.For):
            target = node.target
            first = target.elements[0].value if isinstance(target, cst.Tuple) and target.elements else target
            if (name := dotted(first)) is not None:
                names.add(name)
    return names


def _reading(loop: TrainingLoop, expr: cst.BaseExpression, counters: set[str]) -> GateTest | None:
    return read_gate(expr, loop.unit.single_value, counters, loop.unit.text_of)


def _first_micro_batch(test: GateTest) -> bool:
    """``micro_step == 0``: true on the first micro-batch of the window, not the last."""
    bound = test.count_bound
    return test.update_when and isinstance(bound, cst.Integer) and bound.value == "0"


def _guard_wrong(loop: TrainingLoop, guard: cst.With, counters: set[str]) -> tuple[str, cst.IfExp | None] | None:
    """How the guard's condition picks the wrong micro-batch, if it visibly does, with the choice
    to report instead of the ``with`` when the item calls a name the choice picks a context
    factory for (``ctx = model.no_sync if skip else nullcontext``, then ``with ctx():``: the
    assignment holds the defect)."""
    for item in guard.items:
        choice, called = _choice(loop, item.item)
        wrong = _choice_wrong(loop, choice, called, counters) if choice is not None else None
        if wrong is not None:
            assert choice is not None
            return wrong, choice if called else None
    return None


def _choice_wrong(loop: TrainingLoop, choice: cst.IfExp, called: bool, counters: set[str]) -> str | None:
    """How the inline choice's test picks the wrong micro-batch for its guard arm, if it does."""
    test = _reading(loop, choice.test, counters)
    if test is None:
        return None
    body, orelse = _arm_guards(loop, choice.body, called), _arm_guards(loop, choice.orelse, called)
    skips_when_true, skips_when_false = body and not orelse, orelse and not body
    if (skips_when_true and test.update_when) or (skips_when_false and not test.update_when):
        return "skips the sync at the update boundary (inverted)"
    if _first_micro_batch(test) and skips_when_false:
        return "synchronises on the first micro-batch, not the last"
    if (skips_when_true or skips_when_false) and _off_by_one(loop, test):
        return "syncs the first micro-batch, off by one from the gate"
    return None


def _chosen_guard(loop: TrainingLoop, ancestors: tuple[cst.CSTNode, ...]) -> cst.With | None:
    """The innermost ``with`` inside the loop that enters a choice one arm of which is a guard
    (``with ctx():`` for ``ctx = model.no_sync if skip else ctx``)."""
    for node in reversed(ancestors):
        if node is loop.root:
            return None
        if isinstance(node, cst.With):
            for item in node.items:
                choice, called = _choice(loop, item.item)
                if choice is not None and (_arm_guards(loop, choice.body, called) or _arm_guards(loop, choice.orelse, called)):
                    return node
    return None


def _choice(loop: TrainingLoop, expr: cst.BaseExpression) -> tuple[cst.IfExp | None, bool]:
    """The inline choice the ``with`` item enters, and whether the item calls it (``with ctx():``
    for ``ctx = model.no_sync if skip else ctx``, where ``ctx = nullcontext`` before): the
    item itself, the only value of a name, or the one choice among a name's values whose
    other values are no guards."""
    called = isinstance(expr, cst.Call) and not expr.args
    name = dotted(expr.func) if isinstance(expr, cst.Call) and called else dotted(expr)
    if isinstance(expr, cst.IfExp):
        return expr, False
    if name is None:
        return None, False
    values = loop.unit.bound_values(name)
    choices = [v for v in values if isinstance(v, cst.IfExp)]
    if len(choices) != 1 or any(not isinstance(v, cst.IfExp) and _arm_guards(loop, v, called) for v in values):
        return None, False
    return choices[0], called


def _arm_guards(loop: TrainingLoop, arm: cst.CSTNode, called: bool) -> bool:
    """Whether an arm of the choice skips the sync: a guard, or ``model.no_sync`` left for the
    ``with`` item to call."""
    if called and isinstance(arm, cst.Attribute) and arm.attr.value in GUARD_ATTRS:
        return True
    return isinstance(arm, cst.BaseExpression) and not called and is_guard(loop.unit, arm)


def _off_by_one(loop: TrainingLoop, test: GateTest) -> bool:
    """The guard's counted test and the loop's update gate read the same counter and modulus
    with different offsets (``i % N != 0`` against ``(i + 1) % N == 0``): the guard's window is
    shifted by one from the update's. A gate that is off by one itself (GL403) is not compared."""
    if test.counter is None or test.modulus is None:
        return False
    text = loop.unit.text_of
    for gate in loop.gates:
        if gate.counter != test.counter or gate.modulus is None or text(gate.modulus) != text(test.modulus):
            continue
        if gate.zero_based and not gate.offset_one:
            return False
        return gate.offset_one != test.offset_one
    return False
