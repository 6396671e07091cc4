"""A hand-written unscale: gradients divided by a loss scaler's scale.

Loss scalers written before ``torch.cuda.amp`` (mmcv's ``LossScaler``, the fp16 hooks of
runner frameworks) multiply the loss by ``loss_scaler.loss_scale`` and undo it on the
gradients themselves, ``param.grad.div_(loss_scaler.loss_scale)``, before clipping and
stepping: the same place in the update as ``scaler.unscale_(optimizer)``. Only a division of a
``.grad`` (or ``.grad.data``) by a value read from a receiver known to be a scaler counts.
"""

from __future__ import annotations

import libcst as cst

from gradlint.model.events import Role, RoleRecord
from gradlint.model.syntax import dotted, first_arg
from gradlint.names import Kind
from gradlint.screen import ModuleFacts

_DIVIDING = frozenset({"div_"})


def hand_unscale(call: cst.Call, facts: ModuleFacts) -> RoleRecord | None:
    """``p.grad.div_(<scaler>.loss_scale)`` (or ``<scaler>.get_scale()``): an unscale by ``<scaler>``."""
    func = call.func
    if not (isinstance(func, cst.Attribute) and func.attr.value in _DIVIDING and _is_grad(func.value)):
        return None
    divisor = first_arg(call)
    if isinstance(divisor, cst.Call) and not divisor.args:
        divisor = divisor.func
    scaler = dotted(divisor.value) if isinstance(divisor, cst.Attribute) else None
    if scaler is None or facts.kind_of(scaler) is not Kind.SCALER:
        return None
    return RoleRecord(Role.UNSCALE, scaler, Kind.SCALER)


def _is_grad(node: cst.BaseExpression) -> bool:
    """``<x>.grad`` or ``<x>.grad.data``."""
    if isinstance(node, cst.Attribute) and node.attr.value == "data":
        node = node.value
    return isinstance(node, cst.Attribute) and node.attr.value == "grad"
