"""Which optimizer a step or a zeroing acts on, named as the loop names it."""

from __future__ import annotations

import libcst as cst

from gradlint.model.events import Event, Role
from gradlint.model.loss import passed_argument
from gradlint.model.syntax import dotted, receiver_text
from gradlint.names import Kind


def held_optimizer(event: Event) -> str | None:
    """The optimizer ``event`` (a step or an optimizer's ``zero_grad``) acts on: its target or
    receiver, an entry of a container under a literal key kept whole (``optim_wrapper['disc']``
    is not ``optim_wrapper['generator']``; ``optimizers[i]`` stays ``optimizers``), and a
    parameter of a followed helper replaced by what its caller passes (``optimizer`` in
    ``def _step_optimizer(self, optimizer)`` reached by ``self._step_optimizer(optim_gen)``)."""
    name = event.target if event.role is Role.STEP else event.receiver
    written = _written(event)
    if written is not None and name is not None:
        name = _name_of(written) or name
    unit = event.unit
    for call, caller in reversed(event.callers):
        if name is None or "." in name or "[" in name:
            break
        argument = passed_argument(unit, call, name)
        named = _name_of(argument) if argument is not None else None
        if named is None:
            break
        name, unit = named, caller
    return name


def _written(event: Event) -> cst.BaseExpression | None:
    """The expression naming the optimizer in the event's call: a scaler step's argument, else
    the method's receiver."""
    call = event.node
    if not isinstance(call, cst.Call) or not isinstance(call.func, cst.Attribute):
        return None
    if event.role is Role.STEP and event.kind is Kind.SCALER:
        return call.args[0].value if call.args else None
    return call.func.value


def _name_of(expr: cst.BaseExpression) -> str | None:
    """``opt``, ``self.opt``, ``opts['disc']`` / ``opts[0]`` (a literal key), ``opts`` for
    ``opts[i]``."""
    if isinstance(expr, cst.Subscript) and len(expr.slice) == 1:
        index = expr.slice[0].slice
        key = index.value if isinstance(index, cst.Index) else None
        holder = dotted(expr.value)
        if holder is not None and isinstance(key, (cst.SimpleString, cst.Integer)):
            return f"{holder}[{key.value}]"
    return receiver_text(expr)
