"""mmengine's ``OptimWrapper``: its ``should_update()`` is the accumulation boundary.

``optim_wrapper.should_update()`` is true when the wrapper's count of ``backward`` calls
reaches ``accumulative_counts`` (or the run's last iteration): the wrapper's own gate, with the
final partial window flushed. Code that calls ``backward`` on the wrapper and steps it under
``if optim_wrapper.should_update():`` accumulates; what runs outside that ``if`` runs once per
micro-batch. Only a receiver known to be an optimizer (by its binding or its name) is read.
"""

from __future__ import annotations

import libcst as cst

from gradlint.model.gate_tests import GateTest
from gradlint.model.syntax import dotted
from gradlint.model.unit import UnitModel
from gradlint.names import Kind

UPDATE_TEST = "should_update"
"""The ``OptimWrapper`` method that is true at the window's boundary."""


def wrapper_gate(unit: UnitModel, expr: cst.BaseExpression) -> GateTest | None:
    """``if <optimizer>.should_update():``: true at an update, with its final window."""
    if not (isinstance(expr, cst.Call) and not expr.args and isinstance(expr.func, cst.Attribute)
            and expr.func.attr.value == UPDATE_TEST):
        return None
    receiver = dotted(expr.func.value)
    if receiver is None or unit.facts.kind_of(receiver) is not Kind.OPTIMIZER:
        return None
    return GateTest(update_when=True, final_branch=True)
