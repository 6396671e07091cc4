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
            guard = guard_of(loop.unit, loop.root, backward)
            if guard is None or id(guard) in reported:
                continue
            wrong = _guard_wrong(loop, guard, counters)
            if wrong:
                reported.add(id(guard))
                start, end = loop.unit.span(guard), loop.unit.span(guard.items[-1])
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


def _guard_wrong(loop: TrainingLoop, guard: cst.With, counters: set[str]) -> str | None:
    """How the guard's condition picks the wrong micro-batch, if it visibly does."""
    for item in guard.items:
        expr = item.item
        name = dotted(expr)
        bound = loop.unit.single_value(name) if name else None
        choice = bound if isinstance(bound, cst.IfExp) else expr
        if not isinstance(choice, cst.IfExp):
            continue
        test = _reading(loop, choice.test, counters)
        if test is None:
            continue
        skips_when_true = is_guard(loop.unit, choice.body) and not is_guard(loop.unit, choice.orelse)
        skips_when_false = is_guard(loop.unit, choice.orelse) and not is_guard(loop.unit, choice.body)
        if (skips_when_true and test.update_when) or (skips_when_false and not test.update_when):
            return "skips the sync at the update boundary (inverted)"
        if _first_micro_batch(test) and skips_when_false:
            return "synchronises on the first micro-batch, not the last"
    return None
