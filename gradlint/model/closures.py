"""Closures handed to an optimizer's step (``opt.step(closure)``, LBFGS): the optimizer calls
them, before its update, to backpropagate. A closure the unit defines is read there, at the
step, when it backpropagates itself; one that does not (it only computes a loss the optimizer
differentiates) or that the model cannot find leaves the step a closure step, whose backward
is not seen."""

from __future__ import annotations

import libcst as cst


def closure_call(step: cst.Call) -> cst.Call | None:
    """A call of the name ``step`` is handed as its closure (``closure`` for
    ``opt.step(closure)``), to resolve like any call of it; None when the closure is not a
    plain name (``closure if amp else closure_amp``, a lambda) or not the only argument."""
    given = [a for a in step.args if a.keyword is None or a.keyword.value == "closure"]
    if len(given) != 1 or len(step.args) != 1 or not isinstance(given[0].value, cst.Name):
        return None
    return cst.Call(func=cst.Name(given[0].value.value))

