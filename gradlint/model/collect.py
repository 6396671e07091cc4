"""Collect what one unit says about training: events with their ancestors, loops, ifs,
withs and assignments, following calls into the module's own training helpers."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

import libcst as cst

from gradlint.model.calls import classify
from gradlint.model.events import Event, Role, RoleRecord
from gradlint.model.syntax import dotted
from gradlint.model.unit import UnitModel

LOOPS = (cst.For, cst.While)
_INLINE_DEPTH = 4
"""How many calls deep helpers are followed (a cycle is never entered twice)."""
Resolver = Callable[[cst.Call, UnitModel], "UnitModel | None"]
_SCOPES_SKIPPED = (cst.FunctionDef, cst.ClassDef, cst.Lambda)
N = TypeVar("N", bound=cst.CSTNode)


@dataclass(frozen=True)
class Site(Generic[N]):
    """A loop, ``if`` or ``with`` the collector met: the node, its ancestors and its unit."""

    node: N
    ancestors: tuple[cst.CSTNode, ...]
    unit: UnitModel

    def inside(self, node: cst.CSTNode) -> bool:
        """Whether ``node`` encloses this site."""
        return any(a is node for a in self.ancestors)


class Collector(cst.CSTVisitor):
    """Collect events, loops, ifs, withs and assignments with their ancestors.

    A call to a function of the same module that itself trains (``self.train_step(batch)``)
    is followed into that function, in this module or another of the project, up to
    ``_INLINE_DEPTH`` calls deep and never into a function already being walked: its events join the caller's, at
    the call site, each still pointing at its own unit for positions and loss tracing.
    """

    def __init__(self, unit: UnitModel, resolve: Resolver | None = None) -> None:
        self.unit = unit  # the unit being walked (a followed helper's, during the detour)
        self.home = unit  # the unit whose loops are being built
        self.resolver = resolve
        self._chain: list[UnitModel] = [unit]
        self.events: list[Event] = []
        self.loops: list[Site[cst.For | cst.While]] = []
        self.ifs: list[Site[cst.If]] = []
        self.withs: list[Site[cst.With]] = []
        self.counters: set[str] = set()
        self.callees: list[tuple[str, tuple[cst.CSTNode, ...]]] = []
        self._stack: list[cst.CSTNode] = []
        self._statement: cst.CSTNode | None = None
        self._entries: list[tuple[cst.Call, UnitModel]] = []  # each followed call and the unit making it

    def on_visit(self, node: cst.CSTNode) -> bool:
        if isinstance(node, _SCOPES_SKIPPED) and node is not self.unit.root:
            return False
        if isinstance(node, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
            self._statement = node
        if isinstance(node, LOOPS):
            self.loops.append(Site(node, tuple(self._stack), self.unit))
        elif isinstance(node, cst.If):
            self.ifs.append(Site(node, tuple(self._stack), self.unit))
        elif isinstance(node, cst.With):
            self.withs.append(Site(node, tuple(self._stack), self.unit))
        elif isinstance(node, cst.Call):
            self._call(node)
            self._record_callee(node)
        elif isinstance(node, (cst.Assign, cst.AugAssign, cst.AnnAssign)):
            self._assignment(node)
        self._stack.append(node)
        return True

    def on_leave(self, original_node: cst.CSTNode) -> None:
        if self._stack and self._stack[-1] is original_node:
            self._stack.pop()

    def _add(self, record: RoleRecord, node: cst.CSTNode) -> None:
        statement = node if isinstance(node, cst.BaseCompoundStatement) else self._statement or node
        self.events.append(Event(record, node, statement, self.unit, ancestors=tuple(self._stack),
                                 callers=tuple(self._entries)))

    def _call(self, call: cst.Call) -> None:
        found = classify(call, self.unit.facts)
        if not found:
            callee = self.resolver(call, self.unit) if self.resolver and len(self._chain) <= _INLINE_DEPTH else None
            if callee is not None and all(callee is not u for u in self._chain):
                self._inline(call, callee)
            return
        for record in found:
            self._add(record, call)

    def _inline(self, call: cst.Call, callee: UnitModel) -> None:
        saved = (self.unit, self._stack, self._statement)
        self._chain.append(callee)
        self._entries.append((call, self.unit))
        self.unit, self._stack = callee, [*self._stack, call]
        callee.root.visit(self)
        callee.visited = True
        self._entries.pop()
        self._chain.pop()
        self.unit, self._stack, self._statement = saved

    def _record_callee(self, call: cst.Call) -> None:
        """The last name of what ``call`` calls, with where it stands."""
        callee = dotted(call.func) or ""
        if callee:
            self.callees.append((callee.rsplit(".", 1)[-1], tuple(self._stack)))

    def _assignment(self, node: cst.Assign | cst.AugAssign | cst.AnnAssign) -> None:
        line = self.unit.span(node).line
        if isinstance(node, cst.AugAssign):
            name = dotted(node.target)
            if name is None:
                return
            self._record(name, line, node)
            if isinstance(node.operator, cst.AddAssign) and isinstance(node.value, cst.Integer):
                self.counters.add(name)
                self._add(RoleRecord(Role.COUNTER, name), node)
            return
        targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
        for target in targets:
            if isinstance(target, cst.Attribute) and target.attr.value == "require_backward_grad_sync":
                self._add(RoleRecord(Role.SYNC_TOGGLE, dotted(target.value)), node)
            if isinstance(target, cst.Attribute) and _is_grad_reset(target, node.value):
                self._add(RoleRecord(Role.ZERO_GRAD, dotted(target)), self._zeroing_loop(target) or node)
            name = dotted(target)
            if name is not None and node.value is not None:
                self._record(name, line, node.value)

    def _record(self, name: str, line: int, value: cst.CSTNode) -> None:
        if not self.unit.visited:
            self.unit.assignments.setdefault(name, []).append((line, value))


    def _zeroing_loop(self, target: cst.Attribute) -> cst.For | None:
        """The ``for p in params:`` loop around ``p.grad = None``: the zeroing statement."""
        loop = next((a for a in reversed(self._stack) if isinstance(a, LOOPS)), None)
        if isinstance(loop, cst.For) and dotted(loop.target) == dotted(target.value):
            return loop
        return None


def _is_grad_reset(target: cst.Attribute, value: cst.BaseExpression | None) -> bool:
    """``p.grad = None``."""
    return target.attr.value == "grad" and isinstance(value, cst.Name) and value.value == "None"
