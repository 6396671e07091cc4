"""Follow the loss that reaches a backward call: is it scaled for accumulation?

The trace follows simple assignments inside the unit only. It answers ``SCALED`` when any
division or multiplication (or a ``div``/``mul`` call) touches the loss on its way,
``UNSCALED`` when the loss demonstrably comes straight from a model or criterion, and
``UNKNOWN`` otherwise; rules act on ``UNSCALED`` only.
"""

from __future__ import annotations

from enum import Enum

import libcst as cst

from gradlint.model.syntax import dotted, names_in
from gradlint.model.unit import UnitModel
from gradlint.names import Kind

_PASS_THROUGH = frozenset({"mean", "sum", "float", "double", "half", "to", "squeeze", "contiguous", "clone", "cuda"})
_SCALING_CALLS = frozenset({"div", "div_", "mul", "mul_", "true_divide", "multiply", "divide"})
_SCALING_WORDS = ("accum", "num_items", "micro", "n_acc", "acc_steps", "grad_acc")


class Scaling(str, Enum):
    """The verdict on a loss expression."""

    SCALED = "scaled"
    UNSCALED = "unscaled"
    UNKNOWN = "unknown"


def loss_scaling(unit: UnitModel, expr: cst.BaseExpression | None, line: int) -> Scaling:
    """Whether the loss ``expr`` (used at ``line``) was divided for accumulation."""
    if expr is None:
        return Scaling.UNKNOWN
    return _trace(unit, expr, line, depth=0, seen=set())


def _combine(verdicts: list[Scaling]) -> Scaling:
    if Scaling.SCALED in verdicts:
        return Scaling.SCALED
    if verdicts and all(v is Scaling.UNSCALED for v in verdicts):
        return Scaling.UNSCALED
    return Scaling.UNKNOWN


def _trace(unit: UnitModel, expr: cst.BaseExpression, line: int, depth: int, seen: set[str]) -> Scaling:
    if depth > 8:
        return Scaling.UNKNOWN
    if isinstance(expr, cst.BinaryOperation):
        if isinstance(expr.operator, (cst.Divide, cst.Multiply, cst.FloorDivide)):
            return Scaling.SCALED
        if isinstance(expr.operator, (cst.Add, cst.Subtract)):
            return _combine([_trace(unit, expr.left, line, depth + 1, seen),
                             _trace(unit, expr.right, line, depth + 1, seen)])
        return Scaling.UNKNOWN
    if isinstance(expr, cst.Call):
        return _trace_call(unit, expr, line, depth, seen)
    if isinstance(expr, cst.Subscript):
        return _trace(unit, expr.value, line, depth + 1, seen)
    name = dotted(expr)
    if name is None:
        return Scaling.UNKNOWN
    if name not in unit.assignments and isinstance(expr, cst.Attribute):
        return _trace(unit, expr.value, line, depth + 1, seen)
    return _trace_name(unit, name, line, depth, seen)


def _trace_name(unit: UnitModel, name: str, line: int, depth: int, seen: set[str]) -> Scaling:
    if name in seen:
        return Scaling.UNKNOWN
    values = unit.bound_values(name, before_line=line)
    if not values:
        return Scaling.UNKNOWN
    verdicts = []
    for value in values:
        if isinstance(value, cst.AugAssign):
            scaling = isinstance(value.operator, (cst.DivideAssign, cst.MultiplyAssign))
            verdicts.append(Scaling.SCALED if scaling else _trace(unit, value.value, line, depth + 1, seen | {name}))
        elif isinstance(value, cst.BaseExpression):
            verdicts.append(_trace(unit, value, line, depth + 1, seen | {name}))
    return _combine(verdicts)


def _trace_call(unit: UnitModel, call: cst.Call, line: int, depth: int, seen: set[str]) -> Scaling:
    func = call.func
    attr = func.attr.value if isinstance(func, cst.Attribute) else dotted(func) or ""
    last = attr.rsplit(".", 1)[-1]
    if last in _SCALING_CALLS:
        return Scaling.SCALED
    if isinstance(func, cst.Attribute):
        receiver = dotted(func.value)
        if last == "scale" and unit.facts.kind_of(receiver) is Kind.SCALER and call.args:
            return _trace(unit, call.args[0].value, line, depth + 1, seen)
        if last in _PASS_THROUGH:
            return _trace(unit, func.value, line, depth + 1, seen)
    if _mentions_scaling(call):
        return Scaling.SCALED
    callee = dotted(func) or ""
    local = callee.rsplit(".", 1)[-1]
    if local in unit.facts.functions and (callee == local or callee.startswith("self.")):
        return Scaling.UNKNOWN
    return Scaling.UNSCALED


def _mentions_scaling(call: cst.Call) -> bool:
    """An argument named like the accumulation factor: the callee is told about N."""
    for arg in call.args:
        words = names_in(arg.value) | ({arg.keyword.value} if arg.keyword else set())
        if any(w in name.lower() for name in words for w in _SCALING_WORDS):
            return True
    return False
