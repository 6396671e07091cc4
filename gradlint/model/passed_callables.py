"""Callables handed to a helper that calls them: ``self._with_events(self._step, 'step', ...)``
where ``_with_events(self, f, ...)`` runs ``f()``. The helper's call of its parameter runs the
function the caller passed, there, with the arguments the helper gives it.

It is read so only when the helper calls the parameter once on its every path: not in a loop,
a branch, an ``except``/``else`` clause, a conditional expression or a short-circuit operand
(the helper then decides how often it runs, which is not read), and only when the helper never
rebinds the parameter and the caller passes a plain function or method reference
(``self._step``, ``train_step``), not one of its own parameters.
"""

from __future__ import annotations

import libcst as cst

from gradlint.model.loss import passed_argument
from gradlint.model.syntax import dotted, parameter_names
from gradlint.model.unit import UnitModel

_CONDITIONAL = (cst.For, cst.While, cst.If, cst.ExceptHandler, cst.ExceptStarHandler, cst.Else, cst.IfExp,
                cst.BooleanOperation, cst.Match, cst.CompFor, cst.Lambda)
"""Ancestors under which a call runs some times, or not at all, on a path through the helper."""


def passed_call(call: cst.Call, helper: UnitModel, own: tuple[cst.CSTNode, ...],
                entry: tuple[cst.Call, UnitModel]) -> cst.Call | None:
    """The call that ``call`` (``f(...)`` in ``helper``, under the ancestors ``own`` of the
    helper's tree) makes in the caller of ``entry`` (the call that reached ``helper`` and the
    unit making it): the passed reference called with ``call``'s arguments; None when ``f`` is
    no such parameter or the helper does not run it exactly once."""
    if not isinstance(call.func, cst.Name) or not isinstance(helper.root, cst.FunctionDef):
        return None
    name = call.func.value
    if name not in parameter_names(helper.root) or helper.assignments.get(name) or any(
            isinstance(a, _CONDITIONAL) for a in own):
        return None
    site, caller = entry
    passed = passed_argument(helper, site, name)
    reference = dotted(passed)
    if passed is None or reference is None or _parameter_of(caller, reference.partition(".")[0]):
        return None
    return cst.Call(func=passed, args=call.args)


def _parameter_of(unit: UnitModel, name: str) -> bool:
    """Whether ``name`` is a parameter of ``unit``'s function (not ``self``: its methods are the
    class's)."""
    return name != "self" and isinstance(unit.root, cst.FunctionDef) and name in parameter_names(unit.root)
