"""A method call on a receiver of unknown class, resolved by class-hierarchy analysis over the
project: ``self.task.train_step(sample=..., optimizer=...)`` where ``self.task`` is an
unannotated constructor parameter.

Every project class method of that name that can take the call's arguments is a possible
callee. When they all do the same training (the same roles: a backward, a step), and one of
them is defined by a class every other one derives from, the call reaches that one (its
events stand for all of them). Otherwise nothing is resolved: two callees that differ, one that
cannot be read (a ``super()`` call leaving the project, a file that does not parse), or one of
the caller's own class hierarchy (the receiver may then be another instance of it)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import libcst as cst

from gradlint.model.collect import Collector, Resolver
from gradlint.model.events import Role
from gradlint.model.syntax import dotted
from gradlint.project.context import ProjectContext
from gradlint.project.method_sites import MethodSite
from gradlint.project.symbols import ClassInfo, Definition

if TYPE_CHECKING:
    from gradlint.model.unit import UnitModel

Effect = frozenset[tuple[Role, "str | None"]]
UnitsIn = Callable[[Definition], "list[UnitModel] | None"]
"""The parsed candidate units written inside a definition (None: one does not parse)."""
_MAX_SUPER = 8
_LIBRARY_NAMES = frozenset({"step", "zero_grad", "backward"})
"""Methods that libraries' objects of every sort define (a profiler's or an environment's
``step``): a call of one on an object of unknown class is not taken for a project method."""


def dispatched(call: cst.Call, caller: UnitModel, project: ProjectContext, units_in: UnitsIn,
               resolve: Resolver) -> Definition | None:
    """The project method standing for every method ``call`` may reach, if they all agree."""
    func = call.func
    if not isinstance(func, cst.Attribute):
        return None
    receiver = dotted(func.value)
    if receiver is None or func.attr.value in _LIBRARY_NAMES or not _unknown(receiver, caller):
        return None
    sites = project.method_sites.named(func.attr.value)
    if not sites:
        return None
    positional = sum(a.keyword is None and not a.star for a in call.args)
    keywords = frozenset(a.keyword.value for a in call.args if a.keyword is not None)
    starred = any(a.star for a in call.args)
    fitting = [s for s in sites if s.accepts(positional, keywords, starred)]
    if not fitting or _related(project, caller, fitting):
        return None
    first = _effect(project, fitting[0], sites, units_in, resolve, _MAX_SUPER)
    if not first or any(_effect(project, s, sites, units_in, resolve, _MAX_SUPER) != first for s in fitting[1:]):
        return None  # no training, or callees that differ
    root = next((s for s in fitting if all(_derives(project, other.cls, s.cls) for other in fitting)), None)
    return root.definition if root is not None else None


def _unknown(receiver: str, caller: UnitModel) -> bool:
    """Whether ``receiver`` is an object handed in, of no kind the model can tell: a ``self``
    attribute or a parameter of the caller (not a local made by a library call, ``with
    profile(...) as prof``, nor an imported module or name)."""
    facts = caller.facts
    head = receiver.partition(".")[0]
    if receiver == "self" or head in facts.aliases or receiver in facts.unknown:
        return False
    root = caller.root
    parameters = {p.name.value for p in root.params.params} if isinstance(root, cst.FunctionDef) else set()
    if head != "self" and head not in parameters:
        return False
    return facts.kind_of(receiver) is None


def _related(project: ProjectContext, caller: UnitModel, sites: list[MethodSite]) -> bool:
    """Whether a callee is of the caller's own class, one of its bases or one of its subclasses."""
    name = caller.unit.class_name
    symbols = project.index.symbols(caller.home or project.path)
    own = symbols.classes.get(name) if symbols is not None and name is not None else None
    if own is None:
        return False
    return any(_derives(project, s.cls, own) or _derives(project, own, s.cls) for s in sites)


def _derives(project: ProjectContext, cls: ClassInfo, base: ClassInfo) -> bool:
    """Whether ``cls`` is ``base`` or derives from it through project classes."""
    return any(c.definition == base.definition for c in project.kinds.with_bases(cls))


def _effect(project: ProjectContext, site: MethodSite, sites: list[MethodSite], units_in: UnitsIn,
            resolve: Resolver, depth: int) -> Effect | None:
    """The roles (with their framework) of what the method does: its own calls, those of the
    functions written in it, and those of the base method its ``super()`` call reaches."""
    units = units_in(site.definition)
    if units is None or depth <= 0:
        return None
    found = {(e.record.role, e.record.framework) for unit in units for e in Collector(unit, resolve).events}
    if site.calls_super:
        name = site.definition.qualname.rsplit(".", 1)[-1]
        base = next((m for b in project.kinds.project_bases(site.cls)
                     if (m := project.index.method(b, name)) is not None), None)
        inherited = next((s for s in sites if s.definition == base), None)
        if inherited is None:
            return None  # `super()` reaches a class outside the project
        more = _effect(project, inherited, sites, units_in, resolve, depth - 1)
        if more is None:
            return None
        found |= more
    return frozenset(found)
