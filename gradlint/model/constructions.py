"""Where a training object is built: the call assigned to a name in the loop's own unit, or,
for an attribute of ``self``, in another method of the same class (``self.scheduler = ...``
in ``__init__``, stepped in ``train``). Only a single assignment counts; a name assigned
twice, or built in another module, has no construction here (the rules then say nothing)."""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from gradlint.model.preorder import preorder
from gradlint.model.syntax import dotted
from gradlint.model.unit import UnitModel


@dataclass(frozen=True)
class Construction:
    """The call that builds an object, the unit it is written in, and that unit's assignments
    (for tracing the call's arguments)."""

    unit: UnitModel
    call: cst.Call
    assignments: dict[str, list[cst.BaseExpression]]

    def values(self, name: str) -> list[cst.BaseExpression]:
        """What ``name`` is assigned in the construction's unit."""
        return self.assignments.get(name, [])


def construction_of(unit: UnitModel, name: str) -> Construction | None:
    """The single call that builds ``name`` (see the module docstring)."""
    own = unit.bound_values(name)
    if own:
        value = own[0]
        if len(own) == 1 and isinstance(value, cst.Call):
            return Construction(unit, value, _own_assignments(unit))
        return None
    if not name.startswith("self.") or name.count(".") != 1 or unit.siblings is None:
        return None
    attribute = name.split(".", 1)[1]  # libcst reads names as written: an assignment of it spells it
    found = [(other, value) for other in unit.siblings(attribute) for value in assignments_in(other).get(name, [])]
    if len(found) != 1:
        return None
    other, call = found[0]
    return Construction(other, call, assignments_in(other)) if isinstance(call, cst.Call) else None


def _own_assignments(unit: UnitModel) -> dict[str, list[cst.BaseExpression]]:
    return {name: [v for _, v in pairs if isinstance(v, cst.BaseExpression)] for name, pairs in unit.assignments.items()}


def assignments_in(unit: UnitModel) -> dict[str, list[cst.BaseExpression]]:
    """Every ``name = value`` (and ``self.x = value``) of the unit, by dotted target; a tuple
    target records nothing (its elements take parts of the value). Walked once per model."""
    if unit.all_assignments is not None:
        return unit.all_assignments
    found: dict[str, list[cst.BaseExpression]] = {}
    unit.all_assignments = found

    for node in preorder(unit.root).nodes:
        if isinstance(node, cst.Assign):
            for target in node.targets:
                name = dotted(target.target)
                if name is not None:
                    found.setdefault(name, []).append(node.value)
        elif isinstance(node, cst.AnnAssign):
            name = dotted(node.target)
            if name is not None and node.value is not None:
                found.setdefault(name, []).append(node.value)
        elif isinstance(node, cst.AugAssign):
            name = dotted(node.target)
            if name is not None:
                found.setdefault(name, []).append(node.value)  # a second value: the name is not single
    return found
