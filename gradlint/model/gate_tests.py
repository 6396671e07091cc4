"""Read an ``if`` test: is it an accumulation gate, which branch updates, what is N."""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, replace

import libcst as cst

from gradlint.model.framework_methods import FINAL_CALLS, GATE_CALLS
from gradlint.model.syntax import dotted, names_in

_STEP_FLAG = re.compile(r"^(should|do)_(optimizer_)?step$")
"""A flag named for deciding the optimizer step (``should_step``, ``do_step``), with no value to read."""
_FINAL_WORDS = ("len(", "last", "final", "steps_per_epoch", "num_batches", "epoch_end", "new_epoch", "max_steps",
                "total_steps")


@dataclass(frozen=True)
class GateTest:
    """What a gate test says: which branch runs once per update, and its arithmetic."""

    update_when: bool
    counter: str | None = None
    modulus: cst.BaseExpression | None = None
    count_bound: cst.BaseExpression | None = None
    offset_one: bool = False
    final_branch: bool = False
    exact: bool = True  # the test is false only at an update (for a test true while accumulating)


Lookup = Callable[[str], "cst.BaseExpression | None"]
Code = Callable[[cst.CSTNode], str]


def read_gate(
    expr: cst.BaseExpression, lookup: Lookup, counters: set[str], code: Code, depth: int = 0
) -> GateTest | None:
    """Return the gate reading of ``expr``; ``lookup(name)`` gives a name's assigned test."""
    if depth > 4:
        return None
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Not):
        inner = read_gate(expr.expression, lookup, counters, code, depth + 1)
        return replace(inner, update_when=not inner.update_when) if inner else None
    if isinstance(expr, cst.BooleanOperation):
        return _read_bool(expr, lookup, counters, code, depth)
    if isinstance(expr, cst.Comparison):
        return _read_comparison(expr, counters)
    if isinstance(expr, cst.Call):
        return _read_gate_call(expr)
    modulo = _modulo(expr)
    if modulo is not None:  # `if (i + 1) % N:` is true while accumulating
        counter, modulus, plus_one = modulo
        return GateTest(False, counter, modulus, offset_one=plus_one)
    name = dotted(expr)
    if name is None:
        return None
    last = name.rsplit(".", 1)[-1]
    if last == "sync_gradients":
        return GateTest(update_when=True)
    assigned = lookup(name)
    if assigned is not None:
        return read_gate(assigned, lookup, counters, code, depth + 1)
    if last == "is_accumulating":
        return GateTest(update_when=False)
    if _STEP_FLAG.match(last):  # a flag handed in (`def train_step(self, batch, should_step)`): true at an update
        return GateTest(update_when=True)
    return None


def read_last_micro_batch(expr: cst.BaseExpression, index: str) -> GateTest | None:
    """``micro_step == N - 1`` (or ``micro_step + 1 == N``) on a micro-batch loop's own index:
    the boundary written inside the micro-batch loop, on its last micro-batch."""
    if not (isinstance(expr, cst.Comparison) and len(expr.comparisons) == 1
            and isinstance(expr.comparisons[0].operator, cst.Equal)):
        return None
    sides = (expr.left, expr.comparisons[0].comparator)
    for mine, other in (sides, sides[::-1]):
        if dotted(mine) == index and _is_minus_one(other):
            bound = other.left  # type: ignore[attr-defined]
        elif (isinstance(mine, cst.BinaryOperation) and isinstance(mine.operator, cst.Add)
              and dotted(mine.left) == index and _is_int(mine.right, 1)):
            bound = other
        else:
            continue
        return GateTest(True, index, count_bound=bound, offset_one=True)
    return None


def is_final_condition(expr: cst.BaseExpression, code: Code) -> bool:
    """Whether a test names the end of the epoch (``i + 1 == len(loader)``, ``is_last``)."""
    text = code(expr).lower()
    return any(word in text for word in _FINAL_WORDS)


def _read_bool(
    expr: cst.BooleanOperation, lookup: Lookup, counters: set[str], code: Code, depth: int
) -> GateTest | None:
    operands = _flatten(expr, type(expr.operator))
    readings = [read_gate(op, lookup, counters, code, depth + 1) for op in operands]
    gates = [r for r in readings if r is not None]
    if not gates:
        return None
    first = gates[0]
    if isinstance(expr.operator, cst.Or) == first.update_when:
        lead = readings.index(first)
        ends = [i != lead and _ends_epoch(op, first.counter, lookup, code, depth) for i, op in enumerate(operands)]
        final = any(ends)
        # `accumulating and <unknown>` is false for reasons of its own: its else is no update branch
        exact = first.update_when or all(i == lead or ends[i] or readings[i] is not None for i in range(len(operands)))
        return replace(first, final_branch=first.final_branch or final, exact=first.exact and exact)
    return first


def _read_gate_call(call: cst.Call) -> GateTest | None:
    """A runner hook's gate helper (``self.every_n_iters(runner, k)``, see
    :data:`~gradlint.model.framework_methods.GATE_CALLS`): true at an update, offset by one."""
    name = dotted(call.func)
    helper = GATE_CALLS.get(name.rsplit(".", 1)[-1]) if name else None
    args = [a.value for a in call.args if a.keyword is None and not a.star]
    if helper is None or len(args) <= helper.modulus:
        return None
    owner = dotted(args[0])
    return GateTest(True, f"{owner}.{helper.counter}" if owner else None, args[helper.modulus], offset_one=True)


def _ends_epoch(expr: cst.BaseExpression, counter: str | None, lookup: Lookup, code: Code, depth: int) -> bool:
    """A final-window test: it names the end (``len(loader)``, ``is_last``, a hook's
    ``self.end_of_epoch(runner)``), or compares the gate's own counter with something
    (``step + 1 == n_batches``)."""
    if is_final_condition(expr, code):
        return True
    if isinstance(expr, cst.Call):
        name = dotted(expr.func)
        return name is not None and name.rsplit(".", 1)[-1] in FINAL_CALLS
    if isinstance(expr, cst.UnaryOperation):
        return _ends_epoch(expr.expression, counter, lookup, code, depth)
    if isinstance(expr, cst.Comparison):
        return counter is not None and counter in names_in(expr)
    name = dotted(expr)
    assigned = lookup(name) if name and depth < 4 else None
    return assigned is not None and _ends_epoch(assigned, counter, lookup, code, depth + 1)


def _flatten(expr: cst.BaseExpression, op_type: type) -> list[cst.BaseExpression]:
    if isinstance(expr, cst.BooleanOperation) and isinstance(expr.operator, op_type):
        return _flatten(expr.left, op_type) + _flatten(expr.right, op_type)
    return [expr]


def _read_comparison(expr: cst.Comparison, counters: set[str]) -> GateTest | None:
    if len(expr.comparisons) != 1:
        return None
    target = expr.comparisons[0]
    op, left, right = target.operator, expr.left, target.comparator
    mod_side = _modulo(left) or _modulo(right)
    if mod_side is not None:
        other = right if _modulo(left) is not None else left
        counter, modulus, plus_one = mod_side
        zero = _is_int(other, 0)
        minus_one = _is_minus_one(other)
        if isinstance(op, cst.Equal) and (zero or minus_one):
            return GateTest(True, counter, modulus, offset_one=plus_one or minus_one)
        if isinstance(op, (cst.NotEqual, cst.GreaterThan)) and zero:
            return GateTest(False, counter, modulus, offset_one=plus_one)
        return None
    left_name, right_name = dotted(left), dotted(right)
    counter = left_name if _is_counter(left_name, counters) else None
    bound = right
    if counter is None and _is_counter(right_name, counters):
        counter, bound = right_name, left
        op = _mirror(op)
    if counter is None:
        return None
    if isinstance(op, (cst.Equal, cst.GreaterThanEqual)):
        return GateTest(True, counter, count_bound=bound)
    if isinstance(op, (cst.LessThan, cst.NotEqual)):  # `if self.count != N: return` while accumulating
        return GateTest(False, counter, count_bound=bound)
    return None


def _is_counter(name: str | None, counters: set[str]) -> bool:
    """A name the unit increments with ``+= 1`` (an update gate must still hold the step)."""
    return name is not None and name in counters


def _mirror(op: cst.BaseCompOp) -> cst.BaseCompOp:
    if isinstance(op, cst.LessThanEqual):
        return cst.GreaterThanEqual()
    if isinstance(op, cst.GreaterThan):
        return cst.LessThan()
    return op


def _modulo(expr: cst.BaseExpression) -> tuple[str | None, cst.BaseExpression, bool] | None:
    """``(counter, N, plus_one)`` for ``counter % N`` or ``(counter + 1) % N``."""
    if not (isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Modulo)):
        return None
    left = expr.left
    plus_one = False
    if isinstance(left, cst.BinaryOperation) and isinstance(left.operator, cst.Add) and _is_int(left.right, 1):
        left, plus_one = left.left, True
    return dotted(left), expr.right, plus_one


def _is_int(expr: cst.BaseExpression, value: int) -> bool:
    return isinstance(expr, cst.Integer) and expr.evaluated_value == value


def _is_minus_one(expr: cst.BaseExpression) -> bool:
    return (
        isinstance(expr, cst.BinaryOperation)
        and isinstance(expr.operator, cst.Subtract)
        and _is_int(expr.right, 1)
    )
