"""A loss divided by N on one arm of an ``if`` and taken straight from the model on the other.

``if isinstance(x, tuple): loss = model(*x).mean() / N`` ... ``else: loss = model(**x).mean()``,
then ``loss.backward()``: the loss trace sees a division on the way (any division makes it
scaled), yet the micro-batches of one branch weigh N times too much. Read only when the ``if``
tests neither the accumulation itself (``if n > 1: loss = loss / n`` / ``else: loss = loss``
is right) nor a framework that divides for it (a DeepSpeed or Accelerate arm).
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from gradlint.model.loss import ACCUMULATION_WORDS, Scaling, assignments, trace_loss
from gradlint.model.preorder import preorder
from gradlint.model.syntax import dotted
from gradlint.model.unit import UnitModel

_TEST_WORDS = (*ACCUMULATION_WORDS, "acc_steps", "n_acc", "num_items",
               "deepspeed", "engine", "accelerat", "fsdp", "zero", "apex", "fp16", "amp", "scale")
"""Words of an ``if`` test that make its arms' different scaling a choice: the accumulation
factor, the window's count, or a framework (or loss scaler) that divides for one arm."""

_LEAVES = (cst.Return, cst.Raise, cst.Continue, cst.Break)
_NEW_SCOPES = (cst.FunctionDef, cst.ClassDef, cst.Lambda)


@dataclass(frozen=True)
class UnscaledArm:
    """The arm of ``branch`` whose assignment of the loss (``value``) is not divided, and what
    the other arm divides by."""

    branch: cst.If
    value: cst.BaseExpression
    divisor: cst.BaseExpression


def unscaled_arm(unit: UnitModel, loss: cst.BaseExpression | None, line: int, factor: str) -> UnscaledArm | None:
    """The ``if``/``else`` above ``line`` whose two arms last assign the loss name ``loss``
    (nothing reassigns it after the ``if``), one dividing it by the accumulation factor
    ``factor`` (or a divisor named for it) and the other straight from a model or criterion."""
    name = dotted(loss)
    if name is None:
        return None
    lines = [at for at, _ in assignments(unit).get(name, []) if at < line]
    root = unit.root
    for _, node in preorder(root).pruned(lambda n: isinstance(n, _NEW_SCOPES) and n is not root):
        if not isinstance(node, cst.If) or not isinstance(node.orelse, cst.Else):
            continue
        span = unit.span(node)
        if span.end_line >= line or any(span.end_line < at for at in lines) or _names_choice(unit, node.test, factor):
            continue
        arms = [_last_assignment(unit, block, name, lines) for block in (node.body, node.orelse.body)]
        found = _one_unscaled(unit, arms, factor) if arms[0] is not None and arms[1] is not None else None
        if found is not None:
            return UnscaledArm(node, *found)
    return None


def _names_choice(unit: UnitModel, test: cst.BaseExpression, factor: str) -> bool:
    text = unit.text_of(test)
    low = text.lower()
    return factor in text or any(word in low for word in _TEST_WORDS)


def _last_assignment(unit: UnitModel, block: cst.BaseSuite, name: str,
                     lines: list[int]) -> tuple[int, cst.BaseExpression] | None:
    """The arm's own last statement assigning ``name`` (``name = value``, at the arm's top
    level, none after it in the arm), with its line; None when the arm leaves the iteration."""
    if not isinstance(block, cst.IndentedBlock) or any(isinstance(n, _LEAVES) for n in preorder(block).nodes):
        return None
    found: tuple[int, cst.BaseExpression] | None = None
    for statement in block.body:
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small in statement.body:
            if isinstance(small, cst.Assign) and len(small.targets) == 1 and dotted(small.targets[0].target) == name:
                found = (unit.span(statement).line, small.value)
    end = unit.span(block).end_line
    if found is None or any(found[0] < at <= end for at in lines):
        return None
    return found


def _one_unscaled(unit: UnitModel, arms: list[tuple[int, cst.BaseExpression] | None],
                  factor: str) -> tuple[cst.BaseExpression, cst.BaseExpression] | None:
    """(the unscaled arm's value, the other arm's divisor) when one arm divides by N and the
    other is unscaled."""
    traces = [trace_loss(unit, arm[1], arm[0]) for arm in arms if arm is not None]
    for this, other in ((0, 1), (1, 0)):
        kept, divided = traces[this], traces[other]
        if kept.scaling is not Scaling.UNSCALED or divided.scaling is not Scaling.SCALED:
            continue
        divisors = [d for d in divided.divisors if d.text == factor or d.names_accumulation]
        arm = arms[this]
        if divisors and arm is not None:
            return arm[1], divisors[0].node
    return None
