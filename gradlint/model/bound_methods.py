"""Calls through a local name bound to a training object's bound method: ``step_fn =
optimizer.step`` (or ``functools.partial(scaler.step, optimizer)``), then ``step_fn()`` steps the
optimizer there.

The name must be assigned exactly once in the unit, to that method (or a partial of it), and
bound in no other way (a parameter, a loop or ``with`` target, an assignment expression, an
import, a nested ``def`` or ``class``, a ``global`` or ``nonlocal`` declaration): then every call
of it runs that method. Anything else says nothing.
"""

from __future__ import annotations

import libcst as cst

from gradlint.model.calls import classify
from gradlint.model.events import Role, RoleRecord
from gradlint.model.partials import partial_of, through_partial
from gradlint.model.syntax import dotted
from gradlint.model.unit import UnitModel

_ROLES = frozenset({Role.STEP, Role.ZERO_GRAD, Role.CLIP, Role.UNSCALE, Role.SCALER_UPDATE, Role.SCHEDULER_STEP})
"""The roles a bound method's call is read for (a backward's loss is traced from its own
statement, which the alias's call is not)."""


def bound_method_roles(call: cst.Call, unit: UnitModel) -> tuple[RoleRecord, ...]:
    """The roles of ``call`` when its callee is a local name for a bound method (see the
    module's docstring); empty otherwise."""
    if not isinstance(call.func, cst.Name):
        return ()
    name = call.func.value
    value = unit.single_value(name)
    if value is None:
        return ()
    if partial_of(call, unit) is not None:
        method = through_partial(call, unit)
    elif isinstance(value, cst.Attribute) and dotted(value) is not None:
        method = cst.Call(func=value, args=call.args)
    else:
        return ()
    if not isinstance(method.func, cst.Attribute) or name in _other_bindings(unit):
        return ()
    return tuple(r for r in classify(method, unit.facts) if r.role in _ROLES)


def _other_bindings(unit: UnitModel) -> set[str]:
    """The names ``unit`` binds other than by a plain assignment (see the module's docstring)."""
    found: set[str] = set()

    class _Binders(cst.CSTVisitor):
        def visit_Param(self, node: cst.Param) -> None:
            found.add(node.name.value)

        def visit_For(self, node: cst.For) -> None:
            found.update(_names(node.target))

        def visit_CompFor(self, node: cst.CompFor) -> None:
            found.update(_names(node.target))

        def visit_WithItem(self, node: cst.WithItem) -> None:
            if node.asname is not None:
                found.update(_names(node.asname.name))

        def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
            found.update(_names(node.target))

        def visit_ExceptHandler(self, node: cst.ExceptHandler) -> None:
            if node.name is not None:
                found.update(_names(node.name.name))

        def visit_ImportAlias(self, node: cst.ImportAlias) -> None:
            found.add((dotted(node.asname.name) if node.asname else dotted(node.name)) or "")

        def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
            if node is not unit.root:
                found.add(node.name.value)

        def visit_ClassDef(self, node: cst.ClassDef) -> None:
            found.add(node.name.value)

        def visit_Global(self, node: cst.Global) -> None:
            found.update(n.name.value for n in node.names)

        def visit_Nonlocal(self, node: cst.Nonlocal) -> None:
            found.update(n.name.value for n in node.names)

    unit.root.visit(_Binders())
    return found


def _names(node: cst.BaseExpression | cst.CSTNode) -> set[str]:
    """The plain names a binding target holds (in tuples and lists too)."""
    if isinstance(node, cst.Name):
        return {node.value}
    if isinstance(node, (cst.Tuple, cst.List)):
        return {n for element in node.elements for n in _names(element.value)}
    if isinstance(node, cst.StarredElement):
        return _names(node.value)
    return set()
