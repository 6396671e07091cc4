"""Which ``with`` items and loop iterables are DDP sync guards: ``model.no_sync()``,
``fabric.no_backward_sync(...)``, either arm of an inline choice
(``model.no_sync() if not last else nullcontext()``), a name bound to one, or a call to a
function that wraps one (a context manager, or a generator entering one per micro-batch)."""

from __future__ import annotations

import libcst as cst

from gradlint.model.syntax import dotted
from gradlint.model.unit import UnitModel
from gradlint.sync_facts import GUARD_ATTRS


def is_sync_guard(unit: UnitModel, expr: cst.BaseExpression, certain: bool = False) -> bool:
    """Whether the ``with`` item ``expr`` skips DDP's all-reduce (on some micro-batches).

    A name is a guard when one of its values in the unit names one; ``certain`` asks for
    every value to (the reading a rule reports on, not one it stays silent on)."""
    if isinstance(expr, cst.IfExp):
        return is_sync_guard(unit, expr.body, certain) or is_sync_guard(unit, expr.orelse, certain)
    if isinstance(expr, cst.Call):
        func = expr.func
        if isinstance(func, cst.Attribute) and func.attr.value in GUARD_ATTRS:
            return True
        name = dotted(func)
        if name is not None and wraps_guard(unit, name):
            return True
        return name is not None and _bound_to_guard(unit, name, certain)
    name = dotted(expr)
    return name is not None and _bound_to_guard(unit, name, certain)


def wraps_guard(unit: UnitModel, callee: str) -> bool:
    """A function of the module that wraps ``x.no_sync`` (:mod:`gradlint.sync_facts`), or one
    named for it in another module (fastNLP's ``trainer.get_no_sync_context()``)."""
    last = callee.rsplit(".", 1)[-1]
    return last in unit.facts.sync_helpers or "no_sync" in last


def guards_iterations(unit: UnitModel, loop: cst.CSTNode) -> bool:
    """A ``for`` over a generator that enters a sync guard around each iteration
    (lightweight-gan's ``for _ in gradient_accumulate_contexts(N, is_ddp, ddps):``)."""
    if not isinstance(loop, cst.For) or not isinstance(loop.iter, cst.Call):
        return False
    name = dotted(loop.iter.func)
    return name is not None and name.rsplit(".", 1)[-1] in unit.facts.sync_helpers


def _bound_to_guard(unit: UnitModel, name: str, certain: bool) -> bool:
    values = unit.bound_values(name)
    guards = [any(word in unit.text_of(v) for word in GUARD_ATTRS) or _calls_helper(unit, v) for v in values]
    return bool(values) and (all(guards) if certain else any(guards))


def _calls_helper(unit: UnitModel, value: cst.CSTNode) -> bool:
    return isinstance(value, cst.Call) and (name := dotted(value.func)) is not None and wraps_guard(unit, name)
