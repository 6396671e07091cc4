"""Classify one call into its role in the update skeleton (or none)."""

from __future__ import annotations

import re

import libcst as cst

from gradlint.model.events import Role, RoleRecord
from gradlint.model.hand_unscale import hand_unscale
from gradlint.model.syntax import dotted, first_arg, receiver_text
from gradlint.names import CLIP_FUNCTIONS, FRAMEWORK_CLIP_METHODS, Kind
from gradlint.screen import ModuleFacts

_FRAMEWORK_OF = {Kind.ACCELERATOR: "accelerate", Kind.FABRIC: "fabric", Kind.ENGINE: "deepspeed"}
_STEPPERS = (Kind.OPTIMIZER, Kind.ENGINE, Kind.ENGINE_PART)
_NATIVE_SCALER = re.compile(r"^loss_scaler$")
_ZEROING_METHODS = frozenset({"zero_grad", "clear_grad", "clear_gradients"})
"""An optimizer's or model's zeroing: PyTorch's ``zero_grad``, Paddle's ``clear_grad`` (the same
loops run on both backends)."""
_CLIP_NAME = re.compile(r"^clip_\w*grad|^grad(ient)?s?_clip")
"""A project's own clipping function or method (``clip_l2_grad_norm_``, ``self.clip_grads``), or
one handed in by name (``grad_clip_fn(parameters=params)``)."""


def classify(call: cst.Call, facts: ModuleFacts) -> tuple[RoleRecord, ...]:
    """The roles of ``call`` (none, one, or a fused backward and step), judged from its
    callee, receiver bindings and names."""
    native = _native_scaler_call(call)
    if native is not None:
        return native
    found = _classify(call, facts)
    return (found,) if found is not None else ()


def _classify(call: cst.Call, facts: ModuleFacts) -> RoleRecord | None:
    func = call.func
    if isinstance(func, cst.Name):
        return _classify_function(call, func.value, facts)
    if not isinstance(func, cst.Attribute):
        return None
    attr = func.attr.value
    receiver = receiver_text(func.value)
    kind = facts.kind_of(receiver)
    if attr == "backward":
        return _classify_backward(call, func, receiver, kind, facts)
    if attr == "manual_backward":
        return RoleRecord(Role.BACKWARD, receiver, kind, loss=first_arg(call), framework="lightning")
    if attr == "step":
        return _classify_step(call, receiver, kind)
    if attr in _ZEROING_METHODS:
        return RoleRecord(Role.ZERO_GRAD, receiver, kind)
    if attr == "unscale_" and kind is Kind.SCALER:
        return RoleRecord(Role.UNSCALE, receiver, kind, target=dotted(first_arg(call)))
    if attr == "update" and kind is Kind.SCALER:
        return RoleRecord(Role.SCALER_UPDATE, receiver, kind)
    if attr in FRAMEWORK_CLIP_METHODS and (kind in _FRAMEWORK_OF or receiver == "self"):
        framework = _FRAMEWORK_OF.get(kind, "lightning") if kind is not None else "lightning"
        return RoleRecord(Role.CLIP, receiver, kind, framework=framework)
    if attr in CLIP_FUNCTIONS:
        return _classify_function(call, dotted(func) or attr, facts)
    if _CLIP_NAME.search(attr) and kind is None:
        return RoleRecord(Role.CLIP, None, framework="torch")
    if _CLIP_NAME.search(attr) and kind is Kind.OPTIMIZER:  # a wrapper's own (it may unscale first: no GL303)
        return RoleRecord(Role.CLIP, receiver, kind, framework="optimizer")
    if attr == "zero_" and isinstance(func.value, cst.Attribute) and func.value.attr.value == "grad":
        return RoleRecord(Role.ZERO_GRAD, receiver)
    return hand_unscale(call, facts)


def _classify_function(call: cst.Call, name: str, facts: ModuleFacts) -> RoleRecord | None:
    qualified = facts.qualified(name)
    last = qualified.rsplit(".", 1)[-1]
    if last in CLIP_FUNCTIONS or _CLIP_NAME.search(last):
        return RoleRecord(Role.CLIP, None, framework="torch")
    if qualified in ("torch.autograd.backward", "autograd.backward"):
        return RoleRecord(Role.BACKWARD, loss=first_arg(call))
    return None


def _classify_backward(
    call: cst.Call, func: cst.Attribute, receiver: str | None, kind: Kind | None, facts: ModuleFacts
) -> RoleRecord:
    arg = first_arg(call)
    if kind in _FRAMEWORK_OF and arg is not None:
        return RoleRecord(Role.BACKWARD, receiver, kind, loss=arg, framework=_FRAMEWORK_OF[kind])
    if receiver and facts.qualified(receiver) in ("torch.autograd", "autograd"):
        return RoleRecord(Role.BACKWARD, loss=arg)
    return RoleRecord(Role.BACKWARD, loss=func.value)


def _classify_step(call: cst.Call, receiver: str | None, kind: Kind | None) -> RoleRecord | None:
    if kind is Kind.SCALER:
        return RoleRecord(Role.STEP, receiver, kind, target=dotted(first_arg(call)))
    if kind in _STEPPERS:
        closure = any(a.keyword is None or a.keyword.value == "closure" for a in call.args)
        framework = "deepspeed" if kind is Kind.ENGINE else None
        return RoleRecord(Role.STEP, receiver, kind, target=receiver, closure=closure, framework=framework)
    if kind in (Kind.SCHEDULER, Kind.METRIC_SCHEDULER):
        metric = kind is Kind.METRIC_SCHEDULER or bool(call.args)
        return RoleRecord(Role.SCHEDULER_STEP, receiver, kind, metric=metric)
    return None


def _native_scaler_call(call: cst.Call) -> tuple[RoleRecord, RoleRecord] | None:
    """timm / MAE / DeiT's ``loss_scaler(loss, optimizer, clip_grad=..., parameters=...,
    update_grad=<test>)``: scales and backpropagates the loss on every call, and unscales,
    clips and steps the optimizer when ``update_grad`` (``need_update``) holds."""
    name = dotted(call.func)
    if name is None or not _NATIVE_SCALER.search(name.rsplit(".", 1)[-1]):
        return None
    positional = [a.value for a in call.args if a.keyword is None and not a.star]
    keywords = {a.keyword.value: a.value for a in call.args if a.keyword is not None}
    optimizer = positional[1] if len(positional) > 1 else keywords.get("optimizer")
    loss = positional[0] if positional else keywords.get("loss")
    if loss is None or optimizer is None:
        return None
    update = keywords.get("update_grad", keywords.get("need_update"))
    stepped = dotted(optimizer)
    return (RoleRecord(Role.BACKWARD, name, loss=loss, framework="native-scaler"),
            RoleRecord(Role.STEP, stepped, Kind.OPTIMIZER, target=stepped, framework="native-scaler", gated_by=update))
