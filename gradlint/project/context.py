"""The project a linted module belongs to, as the model sees it: kinds of a unit's names and
``self`` attributes read across its class hierarchy, and the training functions of other
project modules that a call reaches.

One :class:`ProjectContext` serves one lint of one module (its kind reader is fresh, so an edited
helper is never read from a stale table); the :class:`~gradlint.project.index.ProjectIndex` under
it may be shared by many lints, since it keeps modules by content digest.
"""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

from gradlint.names import Kind
from gradlint.project.epoch_calls import EpochCalls, epoch_calls
from gradlint.project.index import ProjectIndex
from gradlint.project.kinds import KindReader, ObjectKinds, local_kinds
from gradlint.project.loaders import LoaderTracer
from gradlint.project.method_aliases import method_aliases
from gradlint.project.method_sites import MethodSites
from gradlint.project.mixins import MixinMethods
from gradlint.project.schedules import schedule_factories
from gradlint.project.symbols import ClassInfo, Definition, Target
from gradlint.project.window_counters import window_counters
from gradlint.screen import ModuleFacts, Screen, Unit, may_hold_training_call, screen
from gradlint.source import python_lines


@dataclasses.dataclass(frozen=True)
class ForeignModule:
    """Another project module whose training functions a loop calls: its lines and screen."""

    path: Path
    lines: list[str]
    screened: Screen


class ProjectContext:
    """Kinds and cross-module look-ups for the module at ``path`` (its text is ``text``)."""

    def __init__(self, path: Path, text: str, index: ProjectIndex | None = None,
                 extra_names: dict[str, Kind] | None = None, tree: ast.Module | None = None) -> None:
        self.path = path.absolute()
        self.index = index if index is not None else ProjectIndex()
        self.index.use_text(self.path, text, tree)
        self.used: dict[Path, str | None] = {}  # other modules read: digest (None: looked for, absent)
        self.index.record_reads(self.used, self.path)
        self.kinds = KindReader(self.index)
        self.loaders = LoaderTracer(self.kinds)
        self.mixins = MixinMethods(self.index, self.kinds)
        self.extra_names = extra_names
        self._foreign: dict[Path, ForeignModule | None] = {}
        self._aliases: dict[ClassInfo, dict[str, str]] = {}
        self.method_sites = MethodSites(self.index, self.path)  # a method name's definitions, listed on first use

    def unit_facts(self, path: Path, unit: Unit, facts: ModuleFacts) -> ModuleFacts:
        """``facts`` with the kinds the project gives the unit's names and ``self`` attributes:
        a class's attributes (own and project bases), the unit's own locals and loop variables."""
        definition, cls = self._definition(path, unit)
        if definition is None:
            return facts
        bindings = dict(facts.bindings)
        unknown = set(facts.unknown)
        unclassified = set(facts.unclassified)
        counters = dict(facts.window_counters)
        if cls is not None:
            attributes = self.kinds.attributes(cls)
            _merge(bindings, unknown, attributes, "self.")
            unclassified |= self._unclassified(attributes, "self.")
            counters |= window_counters(self.kinds, attributes, "self.")
        node = self.kinds.node(definition)
        per_epoch = facts.per_epoch_units
        if self._called_per_epoch(path, unit.name, cls):
            per_epoch = per_epoch | {(unit.class_name, unit.name)}
        if node is None:
            return dataclasses.replace(facts, bindings=bindings, unknown=frozenset(unknown), per_epoch_units=per_epoch,
                                       unclassified=frozenset(unclassified), window_counters=counters)
        local = local_kinds(self.kinds, definition, cls, node)
        _merge(bindings, unknown, local, "")
        unclassified |= self._unclassified(local, "")
        counters |= window_counters(self.kinds, local, "")
        loaders = dict(facts.distributed_loaders)  # loaders whose DistributedSampler is built elsewhere
        loaders.update((name, None) for name in self.loaders.distributed_names(definition, cls, node) - set(loaders))
        sets_epoch = facts.sets_epoch or (loaders != facts.distributed_loaders
                                          and self.loaders.reaches_set_epoch(definition, cls, node))
        return dataclasses.replace(facts, bindings=bindings, unknown=frozenset(unknown), distributed_loaders=loaders,
                                   sets_epoch=sets_epoch, per_epoch_units=per_epoch,
                                   schedule_factories=schedule_factories(self.kinds, definition, cls, node),
                                   unclassified=frozenset(unclassified), window_counters=counters)

    def _called_per_epoch(self, path: Path, name: str, cls: ClassInfo | None) -> bool:
        """Whether the project calls function ``name`` of module ``path`` (or method ``name`` of
        ``cls``) from inside an epoch loop: of the module, or of a method of the class or of one
        of its project bases (``self._train(loader)`` in the base's ``train``)."""
        if cls is None:
            calls = self._epoch_calls(path)
            return calls is not None and name in calls.functions
        for current in self.kinds.with_bases(cls):
            calls = self._epoch_calls(current.definition.path)
            if calls is not None and name in calls.methods.get(current.definition.qualname, frozenset()):
                return True
        return False

    def _epoch_calls(self, path: Path) -> EpochCalls | None:
        def make(found: Path, _text: str) -> EpochCalls | None:
            tree = self.index.tree(found)
            return epoch_calls(tree) if tree is not None else None
        return self.index.derived(path, "epoch-calls", make)

    def _unclassified(self, found: ObjectKinds, prefix: str) -> set[str]:
        """The names in ``found`` holding an instance of a project class of no kind the reader can tell."""
        return {prefix + name for name, cls in found.instances.items()
                if cls is not None and name not in found.kinds and self.kinds.class_kind(cls) is None}

    def _definition(self, path: Path, unit: Unit) -> tuple[Definition | None, ClassInfo | None]:
        symbols = self.index.symbols(path)
        if symbols is None:
            return None, None
        if unit.class_name is None:
            found = symbols.functions.get(unit.name)
            return (found, None) if found is not None and _covers(unit, found) else (None, None)
        cls = symbols.classes.get(unit.class_name)
        if cls is None:
            return None, None
        method = cls.methods.get(unit.name)
        return (method, cls) if method is not None and _covers(unit, method) else (None, cls)

    def reaching_names(self, wanted: frozenset[str] | None = None) -> frozenset[str]:
        """Names through which a unit of the linted module may call a training function of
        another project module: names it imports that stand for one (or for a class or module
        holding one), and training methods its classes inherit from project bases; of
        ``wanted`` only, when given (the other imported modules are not read)."""
        symbols = self.index.symbols(self.path)
        if symbols is None:
            return frozenset()
        names = {name for name, target in symbols.imports.items()
                 if (wanted is None or name in wanted) and self._trains(target)}
        for cls in symbols.classes.values():
            for base in self.kinds.project_bases(cls):
                names |= self._training_methods(base, set())
        return frozenset(names)

    def _trains(self, target: Target) -> bool:
        """Whether an imported module, function or class holds a training function."""
        module = self.module(target.path)
        if module is None or not module.screened.units:
            return False
        if not target.attribute:
            return True
        found = self.index.lookup(target.path, target.attribute)
        if isinstance(found, Definition):
            return self._is_training(found)
        if isinstance(found, ClassInfo):
            return bool(self._training_methods(found, set()))
        return False

    def _is_training(self, definition: Definition) -> bool:
        module = self.module(definition.path)
        return module is not None and training_unit(module, definition) is not None

    def _training_methods(self, cls: ClassInfo, seen: set[ClassInfo]) -> set[str]:
        seen.add(cls)
        names = {name for name, method in cls.methods.items() if self._is_training(method)}
        for base in self.kinds.project_bases(cls):
            if base not in seen:
                names |= self._training_methods(base, seen)
        return names

    def reach(self, path: Path, dotted: str, class_name: str | None) -> Definition | None:
        """The project function or method that a call of ``dotted`` (``f``, ``mod.f``,
        ``self.m``) written in module ``path`` (in class ``class_name``) reaches."""
        head, _, rest = dotted.partition(".")
        if head == "self":
            if class_name is None or not rest:
                return None
            symbols = self.index.symbols(path)
            cls = symbols.classes.get(class_name) if symbols is not None else None
            owner, _, method = rest.rpartition(".")
            if cls is not None and owner:  # `self.trainer.step_all()`: a method of a project instance
                cls = self.kinds.held(cls, owner)
            if cls is None:
                return None
            own = self.index.method(cls, method) or self._aliased(cls, method)
            if (own is None or self.mixins.declared_only(own)) and not owner:  # a mixin's: where it is mixed in
                return self.mixins.method(cls, method) or own
            return own
        found = self.index.lookup(path, dotted)
        return found if isinstance(found, Definition) else None

    def _aliased(self, cls: ClassInfo, attribute: str) -> Definition | None:
        """The method of ``cls`` that ``self.<attribute>`` always holds (``self.step_fn =
        self._step``), if any."""
        if cls not in self._aliases:
            self._aliases[cls] = method_aliases(self.kinds, cls)
        name = self._aliases[cls].get(attribute)
        return self.index.method(cls, name) if name is not None else None

    def method_of(self, path: Path, constructor: str, name: str) -> Definition | None:
        """Method ``name`` of the project class that ``constructor`` names in module ``path``."""
        found = self.index.lookup(path, constructor)
        return self.index.method(found, name) if isinstance(found, ClassInfo) else None

    def module(self, path: Path) -> ForeignModule | None:
        """The screen of another project module (read once per lint)."""
        path = path.absolute()
        if path not in self._foreign:
            kind = ("screen", frozenset((self.extra_names or {}).items()))
            self._foreign[path] = self.index.derived(path, kind, self._screen)
        return self._foreign[path]

    def _screen(self, path: Path, text: str) -> ForeignModule | None:
        """The module's screen; None when it cannot be read or parsed, or when its text cannot
        hold a training call (it would have no unit, and only units are looked for here)."""
        if not may_hold_training_call(text):
            return None
        tree = self.index.tree(path)  # parsed once for the module's symbols and its screen
        if tree is None:
            return None
        try:
            screened = screen(text, self.extra_names, tree=tree)
        except (SyntaxError, RecursionError, MemoryError):
            return None
        return ForeignModule(path, python_lines(text), screened)


def training_unit(module: ForeignModule, definition: Definition) -> Unit | None:
    """The candidate unit of ``module`` that ``definition`` is, if it trains (or calls what does)."""
    return next((unit for unit in module.screened.units if is_unit_of(unit, definition)), None)


def is_unit_of(unit: Unit, definition: Definition) -> bool:
    """Whether ``unit`` is the function or method ``definition``."""
    owner, _, name = definition.qualname.rpartition(".")
    return unit.name == name and unit.class_name == (owner or None) and _covers(unit, definition)


def _covers(unit: Unit, definition: Definition) -> bool:
    return unit.start_line <= definition.line <= unit.end_line


def _merge(bindings: dict[str, Kind], unknown: set[str], found: ObjectKinds, prefix: str) -> None:
    """Kinds the project reads override the module-wide guesses; a name assigned objects of
    different kinds becomes unknown."""
    for name, kind in found.kinds.items():
        bindings[prefix + name] = kind
        unknown.discard(prefix + name)
    for name in found.clashes:
        bindings.pop(prefix + name, None)
        unknown.add(prefix + name)

