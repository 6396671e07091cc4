"""Calls through a name bound to ``functools.partial(f, ...)``: the function they reach and the
arguments the partial binds first (``backwards = partial(loss_backwards, fp16)``, then
``backwards(loss, opt)`` calls ``loss_backwards(fp16, loss, opt)``)."""

from __future__ import annotations

from typing import Protocol

import libcst as cst

from gradlint.model.syntax import dotted
from gradlint.screen import ModuleFacts


class Caller(Protocol):
    """What is read of the unit making the call (a :class:`gradlint.model.unit.UnitModel`)."""

    facts: ModuleFacts

    def single_value(self, name: str) -> cst.BaseExpression | None: ...

_PARTIAL = frozenset({"functools.partial", "partial"})


def partial_of(call: cst.Call, caller: Caller) -> cst.Call | None:
    """The ``partial(f, ...)`` call that the callee name of ``call`` is bound to, when the name
    is assigned exactly once in ``caller`` (to a partial of a plain or dotted function name)."""
    if not isinstance(call.func, cst.Name):
        return None
    value = caller.single_value(call.func.value)
    if not isinstance(value, cst.Call) or caller.facts.qualified(dotted(value.func) or "") not in _PARTIAL:
        return None
    first = value.args[0] if value.args else None
    if first is None or first.keyword is not None or first.star or dotted(first.value) is None:
        return None
    if any(a.star for a in value.args):
        return None
    return value


def through_partial(call: cst.Call, caller: Caller) -> cst.Call:
    """``call`` as the function its partial wraps sees it: the partial's function as the callee
    and its bound positional arguments before the call's own, its keywords after them (a
    keyword of the call overrides the partial's; ``call`` itself when it is no partial's)."""
    bound = partial_of(call, caller)
    if bound is None:
        return call
    positional = [a for a in bound.args[1:] if a.keyword is None]
    keywords = [a for a in bound.args[1:] if a.keyword is not None]
    own_positional = [a for a in call.args if a.keyword is None and not a.star]
    own_rest = [a for a in call.args if a.keyword is not None or a.star]
    return cst.Call(func=bound.args[0].value, args=[*positional, *own_positional, *own_rest, *keywords])
