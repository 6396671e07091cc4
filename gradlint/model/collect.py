"""Collect what one unit says about training: events with their ancestors, loops, ifs,
withs and assignments, following calls into the project's training helpers through their
summaries (each unit walked once per lint, spliced at every call site that reaches it)."""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar, cast

import libcst as cst

from gradlint.model.bound_methods import bound_method_roles
from gradlint.model.calls import classify
from gradlint.model.closures import closure_call
from gradlint.model.events import Event, Role, RoleRecord
from gradlint.model.passed_callables import passed_call
from gradlint.model.preorder import Preorder, preorder
from gradlint.model.syntax import dotted
from gradlint.model.unit import UnitModel

LOOPS = (cst.For, cst.While)
_MAX_ITEMS = 20_000
"""How many items (events, sites, calls) one collection splices in all: helpers are followed to
any depth (never into one already being walked), but a call graph that fans out exponentially
stops being followed here."""
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


class Item(enum.Enum):
    """What a summary item is."""

    EVENT = "event"
    LOOP = "loop"
    IF = "if"
    WITH = "with"
    CALLEE = "callee"  # the last name of a call with no role, for TrainingLoop.callees
    CALL = "call"  # a call with no role of its own: perhaps a project function's, followed
    CLOSURE = "closure"  # the closure a step is handed (`opt.step(closure)`): followed when it backpropagates


@dataclass(frozen=True)
class SummaryItem:
    """One thing a unit's walk met, with its ancestors inside the unit (its root first)."""

    item: Item
    node: cst.CSTNode
    ancestors: tuple[cst.CSTNode, ...]
    record: RoleRecord | None = None
    statement: cst.CSTNode | None = None
    name: str = ""
    followable: bool = False  # an event that is a project method's call when one resolves (`amp.backward(loss)`)
    callee: cst.Call | None = None  # a CLOSURE's: a call of the name the step is handed, to resolve


@dataclass
class Summary:
    """What one unit says about training, read once from its own tree: its items in walk
    order and its counters. Calls to other functions are items too, resolved (by the lint's
    resolver) when the summary is spliced into a loop, so a helper is walked once however
    many loops and call sites reach it (and, unchanged, once across lints)."""

    items: list[SummaryItem]
    counters: frozenset[str]


def summary(unit: UnitModel) -> Summary:
    """The unit's summary (walked on first use; its assignments are recorded then)."""
    if unit.summary is None:
        walker = _Walker(unit)
        root = unit.root
        order = preorder(root)
        for index, node in order.pruned(lambda node: isinstance(node, _SCOPES_SKIPPED) and node is not root):
            walker.read(order, index, node)
        unit.summary = Summary(walker.items, frozenset(walker.counters))
    return cast(Summary, unit.summary)


class Collector:
    """Events, loops, ifs, withs and assignments with their ancestors, for the loops of ``unit``.

    A call to a project function that itself trains (``self.train_step(batch)``, a helper of
    another module) is followed into that function's summary, to any depth and never into a
    function already being followed: its events join the caller's, at the call site, each
    still pointing at its own unit for positions and loss tracing.
    """

    def __init__(self, unit: UnitModel, resolve: Resolver | None = None) -> None:
        self.unit = unit
        self.home = unit  # the unit whose loops are being built
        self.resolver = resolve
        self.events: list[Event] = []
        self.loops: list[Site[cst.For | cst.While]] = []
        self.ifs: list[Site[cst.If]] = []
        self.withs: list[Site[cst.With]] = []
        self.counters: set[str] = set()
        self.callees: list[tuple[str, tuple[cst.CSTNode, ...]]] = []
        self._budget = _MAX_ITEMS
        self._splice(unit, (), [unit], ())

    def _splice(self, unit: UnitModel, prefix: tuple[cst.CSTNode, ...], chain: list[UnitModel],
                entries: tuple[tuple[cst.Call, UnitModel], ...]) -> None:
        """Add ``unit``'s summary under the ancestors ``prefix`` (its call site's), following
        its calls into the helpers they reach; ``entries`` are the followed calls that lead to
        ``unit`` (each with the unit making it), outermost first."""
        found = summary(unit)
        self.counters |= found.counters
        self._budget -= len(found.items)
        followed: set[int] = set()  # calls spliced here: their helper's own events and callees stand for them
        for item in found.items:
            ancestors = prefix + item.ancestors if prefix else item.ancestors
            kind = item.item
            if kind is Item.EVENT:
                assert item.record is not None and item.statement is not None
                if item.followable and self._follow(cast(cst.Call, item.node), unit, ancestors, chain, entries):
                    continue
                record = item.record
                if record.closure and id(item.node) in followed:  # its closure's backward is read before it
                    record = dataclasses.replace(record, closure=False)
                self.events.append(Event(record, item.node, item.statement, unit, ancestors=ancestors,
                                         callers=entries))
            elif kind is Item.CLOSURE:
                assert item.callee is not None
                if self._follow(item.callee, unit, ancestors, chain, entries, site=cast(cst.Call, item.node)):
                    followed.add(id(item.node))
            elif kind is Item.CALLEE:
                if id(item.node) not in followed or "zero" in item.name:  # named for zeroing: it may, unread
                    self.callees.append((item.name, ancestors))
            elif kind is Item.CALL:
                if self._follow(cast(cst.Call, item.node), unit, ancestors, chain, entries, item.ancestors):
                    followed.add(id(item.node))
                else:  # `step_fn = optimizer.step`, then `step_fn()`
                    assert item.statement is not None
                    self.events += [Event(r, item.node, item.statement, unit, ancestors=ancestors, callers=entries)
                                    for r in bound_method_roles(cast(cst.Call, item.node), unit)]
            elif kind is Item.LOOP:
                self.loops.append(Site(cast("cst.For | cst.While", item.node), ancestors, unit))
            elif kind is Item.IF:
                self.ifs.append(Site(cast(cst.If, item.node), ancestors, unit))
            else:
                self.withs.append(Site(cast(cst.With, item.node), ancestors, unit))


    def _follow(self, call: cst.Call, unit: UnitModel, ancestors: tuple[cst.CSTNode, ...], chain: list[UnitModel],
                entries: tuple[tuple[cst.Call, UnitModel], ...], own: tuple[cst.CSTNode, ...] | None = None,
                site: cst.Call | None = None) -> bool:
        """Splice the project training function ``call`` reaches, if any (never one being walked):
        one the caller of ``unit`` handed it when ``call`` runs that parameter (``own``: the
        call's ancestors in ``unit``; None for a call that has a role of its own). With ``site``
        (a step handed a closure; ``call`` calls the closure's name), only a local closure that
        backpropagates is spliced, at the step: it runs inside the step, before the update
        (``def closure(): opt.zero_grad(); loss.backward()`` / ``opt.step(closure)``)."""
        callee = self.resolver(call, unit) if self.resolver is not None else None
        passed = passed_call(call, unit, own, entries[-1]) if callee is None and own is not None and entries else None
        if passed is not None and self.resolver is not None:
            callee = self.resolver(passed, entries[-1][1])
        if callee is None or self._budget <= 0 or any(callee is u for u in chain):
            return False
        if site is not None and not _local_backward(callee, unit):
            return False
        at = site if site is not None else call
        self._splice(callee, (*ancestors, at), [*chain, callee], (*entries, (at, unit)))
        return True


class _Walker:
    """One walk of one unit's own tree (nested functions and classes are other units), read
    node by node in visiting order."""

    def __init__(self, unit: UnitModel) -> None:
        self.unit = unit
        self.items: list[SummaryItem] = []
        self.counters: set[str] = set()
        self._statement: cst.CSTNode | None = None
        self._ancestors: tuple[cst.CSTNode, ...] | None = None
        self._order: Preorder | None = None
        self._index = 0

    def read(self, order: Preorder, index: int, node: cst.CSTNode) -> None:
        """Read ``node``, ``order.nodes[index]``."""
        self._order, self._index, self._ancestors = order, index, None
        if isinstance(node, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
            self._statement = node
        if isinstance(node, LOOPS):
            self.items.append(SummaryItem(Item.LOOP, node, self._stack()))
        elif isinstance(node, cst.If):
            self.items.append(SummaryItem(Item.IF, node, self._stack()))
        elif isinstance(node, cst.With):
            self.items.append(SummaryItem(Item.WITH, node, self._stack()))
        elif isinstance(node, cst.Call):
            self._call(node)
        elif isinstance(node, (cst.Assign, cst.AugAssign, cst.AnnAssign)):
            self._assignment(node)

    def _stack(self) -> tuple[cst.CSTNode, ...]:
        """The ancestors of the node being read, outermost first (worked out once per node)."""
        if self._ancestors is None:
            assert self._order is not None
            self._ancestors = self._order.ancestors(self._index)
        return self._ancestors

    def _add(self, record: RoleRecord, node: cst.CSTNode) -> None:
        statement = node if isinstance(node, cst.BaseCompoundStatement) else self._statement or node
        self.items.append(SummaryItem(Item.EVENT, node, self._stack(), record, statement))

    def _call(self, call: cst.Call) -> None:
        found = tuple(_optional_closure(r, call, self.unit) for r in classify(call, self.unit.facts))
        ancestors = self._stack()
        closure = closure_call(call) if any(r.closure for r in found) else None
        if closure is not None:
            self.items.append(SummaryItem(Item.CLOSURE, call, ancestors, callee=closure))
        if found:
            for record in found:
                self._add(record, call)
            if _backward_method_call(call, found):
                self.items[-1] = dataclasses.replace(self.items[-1], followable=True)
            if any(r.role is Role.ZERO_GRAD for r in found) or not self._wrapper_method(call):
                return  # its role says what it does: not a callee that may zero (TrainingLoop.calls_zeroing)
        else:
            self.items.append(SummaryItem(Item.CALL, call, ancestors, statement=self._statement or call))
        callee = dotted(call.func) or ""
        if callee:
            self.items.append(SummaryItem(Item.CALLEE, call, ancestors, name=callee.rsplit(".", 1)[-1]))

    def _wrapper_method(self, call: cst.Call) -> bool:
        """Whether a role call may be a project wrapper's method that zeroes: its receiver has a
        kind from its name alone (``self.optim``, no binding) and a function of the module by
        the method's name zeroes (``AmpOptimizer.step`` calling ``zero_grad``) and can take the
        call's arguments (not ``def step(self, trainer, batch)`` for ``self.optimizer.step()``)."""
        if not isinstance(call.func, cst.Attribute):
            return False
        receiver = dotted(call.func.value)
        facts = self.unit.facts
        method = call.func.attr.value
        own_class = self.unit.unit.class_name
        if receiver is not None and receiver.startswith("self.") and own_class is not None and all(
                u.class_name == own_class for u in facts.functions.get(method, [])):
            return False  # only this class's own method zeroes: `self._optimizer` is another object
        given = sum(not a.star for a in call.args)
        return (receiver is not None and receiver not in facts.bindings
                and receiver.removeprefix("self.") not in facts.bindings
                and method in facts.zeroing_functions and (any(a.star for a in call.args)
                                                           or given >= facts.zeroing_arity.get(method, 0)))

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
        self.unit.assignments.setdefault(name, []).append((line, value))

    def _zeroing_loop(self, target: cst.Attribute) -> cst.For | None:
        """The ``for p in params:`` loop around ``p.grad = None``: the zeroing statement."""
        loop = next((a for a in reversed(self._stack()) if isinstance(a, LOOPS)), None)
        if isinstance(loop, cst.For) and dotted(loop.target) == dotted(target.value):
            return loop
        return None


def _local_backward(closure: UnitModel, caller: UnitModel) -> bool:
    """Whether ``closure`` is a function ``caller`` defines that backpropagates once itself: a
    closure with a loop of its own (a full-batch L-BFGS closure accumulating over the loader) is
    a window the step does not open, and is left a closure."""
    own, outer = closure.unit, caller.unit
    if closure.home != caller.home or not (outer.start_line < own.start_line and own.end_line <= outer.end_line):
        return False
    items = summary(closure).items
    return not any(i.item is Item.LOOP for i in items) and any(
        i.item is Item.EVENT and i.record is not None and i.record.role is Role.BACKWARD for i in items)


def _optional_closure(record: RoleRecord, call: cst.Call, unit: UnitModel) -> RoleRecord:
    """A step handed a name the unit also assigns ``None`` (``closure = None``, then ``closure =
    make_closure()`` only for SAM) is a plain step on the path where it is None, after the
    loop's own backward: not read as a closure step."""
    if record.role is not Role.STEP or not record.closure:
        return record
    names = [dotted(a.value) for a in call.args if a.keyword is None or a.keyword.value == "closure"]
    if len(names) == 1 and names[0] is not None and any(
            isinstance(value, cst.Name) and value.value == "None" for _, value in unit.assignments.get(names[0], [])):
        return dataclasses.replace(record, closure=False)
    return record


def _backward_method_call(call: cst.Call, found: tuple[RoleRecord, ...]) -> bool:
    """``amp.backward(loss)`` / ``self.backward(loss)``: read as a backward, unless it reaches a
    project method that trains (then that method's own calls are the events)."""
    func = call.func
    return (len(found) == 1 and found[0].role is Role.BACKWARD and found[0].framework is None
            and isinstance(func, cst.Attribute) and found[0].loss is func.value
            and any(a.keyword is None and not a.star for a in call.args))


def _is_grad_reset(target: cst.Attribute, value: cst.BaseExpression | None) -> bool:
    """``p.grad = None`` or ``p.grad = torch.zeros_like(p)``."""
    if target.attr.value != "grad":
        return False
    if isinstance(value, cst.Call):
        return (dotted(value.func) or "").rsplit(".", 1)[-1] in ("zeros", "zeros_like")
    return isinstance(value, cst.Name) and value.value == "None"
