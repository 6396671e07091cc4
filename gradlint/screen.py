"""The cheap first pass: one stdlib ``ast`` walk per file (after the text tests of
:mod:`gradlint.prefilter`).

It judges syntax (the running Python's parser decides what is a GL000), builds the module's
facts (import aliases, what names are bound to) and picks the few *units* (functions and
top-level statements) that can hold a training loop. Only those are handed to libcst.
"""

from __future__ import annotations

import ast
import re
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field

from gradlint.callable_params import calls_parameter, parameter_names, passed_references
from gradlint.gradless import names_no_gradient
from gradlint.model.framework_methods import BOUNDARY_WORD, boundary_owned_methods
from gradlint.names import (
    CLIP_FUNCTIONS,
    FRAMEWORK_CLIP_METHODS,
    Kind,
    build_alias_table,
    constructor_kind,
    counts_updates,
    dotted_name,
    kind_by_name,
    resolve,
)
from gradlint.source import parse_python
from gradlint.sync_facts import guarded_calls, sync_facts
from gradlint.walks import walk

_TRAINING_ATTRS = frozenset({"backward", "manual_backward", "step", "zero_grad", "clear_grad", "unscale_"} | CLIP_FUNCTIONS
                            | FRAMEWORK_CLIP_METHODS)
"""Calls that make a unit a candidate: a helper that only zeroes, unscales or clips is followed
from the loop that calls it (``self._clip_gradients()`` on every micro-batch)."""


_CALLED_NAMES = "|".join(sorted(_TRAINING_ATTRS | CLIP_FUNCTIONS | {"backward", "manual_backward", "loss_scaler"}))
_CALLED_WORD = re.compile(rf"(?<!\w)(?:{_CALLED_NAMES})(?!\w)")


_SELF_INCREMENT = re.compile(r"(?<!\w)self\s*\.\s*\w+\s*\+=")
"""``self.<attr> +=``: a method advancing a counter is a unit too (``_Collector.visit_AugAssign``)."""


def may_hold_training_call(text: str) -> bool:
    """Whether ``text`` can hold what makes a unit: a call of :func:`_is_training_call` (it spells
    one of their names as a whole identifier, as written or as Python's parser normalises
    identifiers, NFKC) or a ``self.<attr> +=`` counter. A text that cannot has no unit, so its
    screen is not needed."""
    text = text if text.isascii() else unicodedata.normalize("NFKC", text)
    return _CALLED_WORD.search(text) is not None or _SELF_INCREMENT.search(text) is not None


@dataclass(frozen=True)
class Unit:
    """A function or top-level statement worth a libcst parse (1-based inclusive lines)."""

    name: str
    start_line: int
    end_line: int
    indent: int
    class_name: str | None = None


@dataclass
class ModuleFacts:
    """What the whole module tells about names: aliases, bindings, framework settings."""

    aliases: dict[str, str] = field(default_factory=dict)
    bindings: dict[str, Kind] = field(default_factory=dict)
    prepared: set[str] = field(default_factory=set)
    accelerator_accumulates: bool = False
    unlinked_accelerators: dict[str, bool] = field(default_factory=dict)
    """Accelerators by name, True when every one built under it has ``step_scheduler_with_optimizer=False``:
    their prepared schedulers step on every call, also inside ``accumulate()``."""
    functions: dict[str, list[Unit]] = field(default_factory=dict)
    zeroing_functions: set[str] = field(default_factory=set)
    gradless_zeroers: set[str] = field(default_factory=set)
    """Names of the module's functions named for zeroing (``zero_losses``) none of whose
    definitions names a gradient (:mod:`gradlint.gradless`): they do not zero gradients."""
    zeroing_arity: dict[str, int] = field(default_factory=dict)
    """The fewest positional arguments a zeroing function of that name needs (``self`` aside)."""
    called_by_zeroing: set[str] = field(default_factory=set)
    """Names (``f(...)``, ``self.f(...)``) called by a function or top-level statement of the module
    that zeroes gradients itself: such a caller may zero for what it calls."""
    token_masking: bool = False  # `ignore_index` or a -100 label mask appears in the module
    extra_names: dict[str, Kind] = field(default_factory=dict)
    unknown: frozenset[str] = frozenset()  # names the project assigns objects of different kinds
    unclassified: frozenset[str] = frozenset()
    """Names holding an instance of a project class whose kind the class does not show (no library
    base, no optimizer-like ``step``): what its methods do is the project's own."""
    window_counters: dict[str, tuple[str, int]] = field(default_factory=dict)
    """Methods of project objects that count calls and say when a window ends (``history.step``: the
    attribute counted, the position of N; gradlint/project/window_counters.py)."""
    sets_epoch: bool = False  # the module calls some sampler's or loader's `set_epoch(...)`
    distributed_loaders: dict[str, str | None] = field(default_factory=dict)
    """Loaders built as ``DataLoader(..., sampler=<a shuffling DistributedSampler>)``, with the
    sampler's name (None when it is built inline); every assignment of the name is such a call."""
    wrapped_models: set[str] = field(default_factory=set)  # models returned by `accelerator.prepare` / `fabric.setup`
    disabled_scalers: set[str] = field(default_factory=set)  # `GradScaler(enabled=False)`: no state to lose
    boundary_owned: frozenset[tuple[str, str]] = frozenset()
    """``(class, method)`` of the methods a framework calls per micro-batch, owning the boundary
    (model/framework_methods.py)."""
    schedules: dict[str, str | None] = field(default_factory=dict)
    """The optimizer each scheduler was built on (``sched = StepLR(opt, ...)``: ``opt``), as
    written; None when its assignments name two different optimizers."""
    schedule_factories: dict[str, tuple[tuple[str, int | None], ...]] = field(default_factory=dict)
    """Project functions a unit calls that return a known LR schedule whose length is one of their
    parameters: callee as written -> (keyword, positional index) of that parameter (GL106)."""
    sync_helpers: set[str] = field(default_factory=set)  # functions that wrap `x.no_sync` (gradlint/sync_facts.py)
    sync_models: set[str] = field(default_factory=set)  # receivers of `x.no_sync`: DDP / FSDP models
    guarded_callees: set[str] = field(default_factory=set)  # functions and `self` methods called inside a sync guard
    per_epoch_units: frozenset[tuple[str | None, str]] = frozenset()
    """``(class, name)`` of units the project calls from inside an epoch loop (project/epoch_calls.py)."""

    def kind_of(self, dotted: str | None) -> Kind | None:
        """The kind of a receiver, from its bindings first, its name second; none for a name
        the project assigns objects of different kinds."""
        if not dotted or dotted in self.unknown:
            return None
        if dotted in self.bindings:
            return self.bindings[dotted]
        last = dotted.rsplit(".", 1)[-1]
        if last in self.extra_names:
            return self.extra_names[last]
        if dotted.startswith("self.") and last in self.bindings:
            return self.bindings[last]
        return kind_by_name(dotted)

    def qualified(self, dotted: str) -> str:
        """The qualified name of a dotted local name, through the alias table."""
        return resolve(dotted, self.aliases)


@dataclass
class Screen:
    """The result of screening one module."""

    tree: ast.Module
    facts: ModuleFacts
    units: list[Unit]
    other_units: list[Unit] = field(default_factory=list)
    callers: list[tuple[Unit, frozenset[str]]] = field(default_factory=list)  # the rest, with what they call


def screen(text: str, extra_names: dict[str, Kind] | None = None, *, every_unit: bool = False,
           tree: ast.Module | None = None) -> Screen:
    """Parse ``text`` with ``ast`` (raising SyntaxError) and find the candidate units.

    ``every_unit`` also lists, as ``other_units``, every function and top-level compound
    statement without a training call: for the full analysis the fast path is tested against.
    ``tree`` is the text's ``ast`` tree when the caller has parsed it already.
    """
    tree = parse_python(text) if tree is None else tree
    facts = ModuleFacts(extra_names=dict(extra_names or {}))
    collector = _Collector(facts, every_unit)
    collector.visit(tree)
    collector.promote_callers()
    facts.gradless_zeroers = {name for name, gradless in collector.gradless.items() if gradless}
    facts.aliases = build_alias_table(collector.imports)
    for target, value in collector.assignments:
        _bind(facts, target, value)
    facts.sets_epoch = "set_epoch" in text
    if BOUNDARY_WORD in text:
        facts.boundary_owned = boundary_owned_methods(tree)
    if "no_sync" in text or "no_backward_sync" in text:
        facts.sync_helpers, facts.sync_models = sync_facts(tree)
        facts.guarded_callees = guarded_calls(tree, facts.sync_helpers)
    if "DistributedSampler" in text:
        facts.distributed_loaders = _distributed_loaders(facts, collector.assignments, tree)
    return Screen(tree=tree, facts=facts, units=collector.units, other_units=collector.other_units,
                  callers=collector.waiting)


def _makes_zeros(value: ast.expr) -> bool:
    """``torch.zeros_like(p)`` / ``torch.zeros(...)``: a gradient set to it is zeroed."""
    func = value.func if isinstance(value, ast.Call) else None
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else None
    return name in ("zeros", "zeros_like")


def _is_training_call(node: ast.AST) -> bool:
    if not isinstance(node, ast.Call):
        return False
    func = node.func
    if isinstance(func, ast.Attribute):
        return func.attr in _TRAINING_ATTRS or func.attr == "loss_scaler"
    return isinstance(func, ast.Name) and (func.id in ("backward", "manual_backward", "loss_scaler")
                                           or func.id in CLIP_FUNCTIONS)


LEAVES = (ast.expr_context, ast.Constant, ast.Name, ast.alias, ast.operator, ast.unaryop, ast.cmpop, ast.boolop)
"""Nodes with nothing below them that the walk looks at (contexts, constants, names,
operators): not visiting them halves the walk. The collector has no ``visit_`` method for
any of them (tests/test_fast_path.py checks)."""


class _Collector(ast.NodeVisitor):
    """One walk: imports, assignments, function index and candidate units."""

    def __init__(self, facts: ModuleFacts, every_unit: bool = False) -> None:
        self.facts = facts
        self.every_unit = every_unit
        self.imports: list[tuple[str | None, str, str | None]] = []
        self.assignments: list[tuple[ast.expr, ast.expr]] = []
        self.units: list[Unit] = []
        self.other_units: list[Unit] = []
        self._stack: list[list[bool]] = [[False]]
        self._calls: list[set[str]] = [set()]
        self._zeroing: list[bool] = [False]  # per function (or top-level statement): it zeroes gradients
        self._class: list[str] = []
        self._function: list[str] = []
        self.gradless: dict[str, bool] = {}  # zero-named functions: whether every definition names no gradient
        self.callers: list[tuple[Unit, set[str]]] = []  # units without training calls, and what they call
        self.waiting: list[tuple[Unit, frozenset[str]]] = []  # those no training function of the module promotes
        self.handed: list[tuple[str, set[str]]] = []  # the callee's last name, the references a call hands it
        self.parameter_callers: set[Unit] = set()  # functions that call one of their parameters
        self._methods: dict[type, Callable[[_Collector, ast.AST], object]] = {}  # functions: no cycle

    # the walk: ast.NodeVisitor's, with its method look-up remembered and leaves skipped --------
    def visit(self, node: ast.AST) -> object:
        method = self._methods.get(node.__class__)
        if method is None:
            name = "visit_" + node.__class__.__name__
            method = self._methods[node.__class__] = getattr(type(self), name, type(self).generic_visit)
        return method(self, node)

    def generic_visit(self, node: ast.AST) -> None:
        for name in node._fields:
            value = getattr(node, name, None)
            if isinstance(value, list):
                for item in value:
                    if isinstance(item, ast.AST) and not isinstance(item, LEAVES):
                        self.visit(item)
            elif isinstance(value, ast.AST) and not isinstance(value, LEAVES):
                self.visit(value)

    # imports ---------------------------------------------------------------
    def visit_Import(self, node: ast.Import) -> None:
        self.imports.extend((None, a.name, a.asname) for a in node.names)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        module = "." * node.level + (node.module or "")
        self.imports.extend((module, a.name, a.asname) for a in node.names)

    # bindings --------------------------------------------------------------
    def visit_Assign(self, node: ast.Assign) -> None:
        self.assignments.extend((t, node.value) for t in node.targets)
        grad_reset = any(isinstance(t, ast.Attribute) and t.attr == "grad" for t in node.targets)
        if grad_reset and (isinstance(node.value, ast.Constant) and node.value.value is None or _makes_zeros(node.value)):
            self._zeroes()
        self.generic_visit(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is not None:
            self.assignments.append((node.target, node.value))
        self.generic_visit(node)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        """A method that advances ``self.<update counter> += 1`` is followed from the loop that
        calls it (``self._update_metrics()`` per micro-batch counting ``self._train_step``)."""
        target = node.target
        if (self._function and isinstance(node.op, ast.Add) and isinstance(node.value, ast.Constant)
                and isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name)
                and target.value.id == "self" and counts_updates(target.attr)):
            self._stack[-1][0] = True
        self.generic_visit(node)

    def visit_UnaryOp(self, node: ast.UnaryOp) -> None:
        if isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant) and node.operand.value == 100:
            self.facts.token_masking = True  # labels masked with -100
        self.generic_visit(node)

    def visit_keyword(self, node: ast.keyword) -> None:
        if node.arg == "ignore_index":
            self.facts.token_masking = True
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        if _is_training_call(node):
            self._stack[-1][0] = True
        func = node.func
        if isinstance(func, ast.Name):
            self._calls[-1].add(func.id)
        elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name) and func.value.id == "self":
            self._calls[-1].add(func.attr)
        handed = passed_references(node)  # a helper handed `self._step` may call it
        if handed:
            self._calls[-1] |= handed
            self.handed.append(((dotted_name(func) or "").rsplit(".", 1)[-1], handed))
        if isinstance(node.func, ast.Attribute) and node.func.attr in ("zero_grad", "zero_", "clear_grad", "clear_gradients"):
            self._zeroes()
        if isinstance(node.func, ast.Attribute) and node.func.attr in ("prepare", "prepare_scheduler"):
            self._prepares(node.args)
        self.generic_visit(node)

    def _prepares(self, args: list[ast.expr]) -> None:
        """Names handed to ``accelerator.prepare`` (``*`` when an argument is unpacked)."""
        for arg in args:
            name = "*" if isinstance(arg, ast.Starred) else dotted_name(arg)
            if name is not None:
                self.facts.prepared.add(name)

    def _zeroes(self) -> None:
        self._zeroing[-1] = True
        if self._function:
            self.facts.zeroing_functions.add(self._function[-1])

    def _arity(self, node: ast.FunctionDef | ast.AsyncFunctionDef, *, in_class: bool) -> None:
        """Record how many positional arguments the zeroing function ``node`` needs."""
        args = node.args
        positional = [*args.posonlyargs, *args.args]
        needed = len(positional) - len(args.defaults) - (1 if in_class and positional else 0)
        known = self.facts.zeroing_arity.get(node.name)
        self.facts.zeroing_arity[node.name] = max(0, needed) if known is None else min(known, max(0, needed))

    def _left_scope(self, calls: set[str], zeroes: bool) -> None:
        if zeroes:
            self.facts.called_by_zeroing |= calls

    # units -------------------------------------------------------------------
    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        self._class.append(node.name)
        self.generic_visit(node)
        self._class.pop()

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        start = min([node.lineno] + [d.lineno for d in node.decorator_list])
        unit = Unit(node.name, start, node.end_lineno or node.lineno, node.col_offset,
                    self._class[-1] if self._class else None)
        self.facts.functions.setdefault(node.name, []).append(unit)
        if "zero" in node.name:
            self.gradless[node.name] = self.gradless.get(node.name, True) and names_no_gradient(node)
        self._stack.append([False])
        self._calls.append(set())
        self._zeroing.append(False)
        outer_class = self._class
        self._class = []
        self._function.append(node.name)
        self.generic_visit(node)
        self._function.pop()
        self._class = outer_class
        calls = self._calls.pop()
        zeroes = self._zeroing.pop()
        if zeroes:
            self._arity(node, in_class=bool(outer_class))
        self._left_scope(calls, zeroes)
        if calls & parameter_names(node) and calls_parameter(node):
            self.parameter_callers.add(unit)
        if self._stack.pop()[0]:
            self.units.append(unit)
        else:
            self.callers.append((unit, calls))

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Module(self, node: ast.Module) -> None:
        for stmt in node.body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                self.visit(stmt)
                continue
            self._stack[-1][0] = False
            self._calls[-1] = set()
            self._zeroing[-1] = False
            self.visit(stmt)
            self._left_scope(self._calls[-1], self._zeroing[-1])
            if isinstance(stmt, (ast.For, ast.AsyncFor, ast.While, ast.If, ast.With, ast.AsyncWith, ast.Try)):
                unit = Unit("<module>", stmt.lineno, stmt.end_lineno or stmt.lineno, 0)
                if self._stack[-1][0]:
                    self.units.append(unit)
                else:
                    self.callers.append((unit, self._calls[-1]))

    def promote_callers(self) -> None:
        """A function that calls one of the module's training functions trains through it
        (``for batch in loader: self.train_step(batch)``): it is a unit too, at any number of
        levels up (calls are followed to any depth). So is a function that calls a parameter
        and is handed a function of the module by name somewhere (``_with_events(self, f)``
        handed ``self._step``). The rest become ``other_units`` when every unit is wanted."""
        handed_to = {callee for callee, names in self.handed if names & self.facts.functions.keys()}
        runners = {u for u, _ in self.callers if u in self.parameter_callers and u.name in handed_to}
        self.units.extend(u for u, _ in self.callers if u in runners)
        trainers = {u.name for u in self.units}
        waiting = [(u, calls) for u, calls in self.callers if u not in runners]
        promoted = [(u, calls) for u, calls in waiting if calls & trainers]
        while promoted:
            waiting = [(u, calls) for u, calls in waiting if not calls & trainers]
            self.units.extend(u for u, _ in promoted)
            trainers |= {u.name for u, _ in promoted}
            promoted = [(u, calls) for u, calls in waiting if calls & trainers]
        self.waiting = [(u, frozenset(calls)) for u, calls in waiting]
        if self.every_unit:
            self.other_units.extend(u for u, _ in waiting)


_LOADER_NAME = re.compile(r"loader|(^|[._])(dl|data|dataset|ds)s?($|_)|_dl$|sampler", re.I)


def _distributed_loaders(facts: ModuleFacts, assignments: list[tuple[ast.expr, ast.expr]],
                         tree: ast.Module) -> dict[str, str | None]:
    """Loaders whose every assignment is ``DataLoader(..., sampler=S)`` with ``S`` a shuffling
    ``DistributedSampler`` (a name every assignment of which builds one, or the call itself),
    or a call to a function of the module every return of which is such a loader
    (``train_loader = build_loader(dataset)``; its sampler then has no name here)."""
    values: dict[str, list[ast.expr]] = {}
    for target, value in assignments:
        for element in target.elts if isinstance(target, (ast.Tuple, ast.List)) else [target]:
            name = dotted_name(element)
            if name is not None:  # a tuple's element takes the whole value: never one loader or sampler
                values.setdefault(name, []).append(value if element is target else target)
    samplers = {name for name, found in values.items() if all(_is_shuffling_sampler(facts, v) for v in found)}
    loaders: dict[str, str | None] = {}
    for name, found in values.items():
        drawn = {_loader_sampler(facts, v, samplers) for v in found}
        if len(drawn) == 1 and (sampler := drawn.pop()) != "":
            loaders[name] = sampler
    factories = _loader_factories(facts, tree, loaders, samplers)
    for name, found in values.items():
        if name not in loaders and factories and all(_calls_factory(v, factories) for v in found):
            loaders[name] = None
    return loaders


def _loader_factories(facts: ModuleFacts, tree: ast.Module, loaders: dict[str, str | None],
                      samplers: set[str]) -> set[str]:
    """Functions of the module (one definition of the name) that return a distributed loader
    from every ``return`` of their own body."""
    definitions: dict[str, list[ast.FunctionDef | ast.AsyncFunctionDef]] = {}
    for node in walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            definitions.setdefault(node.name, []).append(node)
    factories = set()
    for name, defs in definitions.items():
        returns = _own_returns(defs[0]) if len(defs) == 1 else []
        if returns and all(value is not None and (dotted_name(value) in loaders or _loader_sampler(
                facts, value, samplers) != "") for value in returns):
            factories.add(name)
    return factories


def _own_returns(function: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.expr | None]:
    """The values of the ``return`` statements of ``function`` itself (not nested functions)."""
    found: list[ast.expr | None] = []
    stack: list[ast.AST] = list(function.body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Return):
            found.append(node.value)
        elif not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            stack.extend(ast.iter_child_nodes(node))
    return found


def _calls_factory(value: ast.expr, factories: set[str]) -> bool:
    callee = dotted_name(value.func) if isinstance(value, ast.Call) else None
    return callee is not None and callee.rsplit(".", 1)[-1] in factories and (
        "." not in callee or (callee.startswith("self.") and callee.count(".") == 1))


def _is_shuffling_sampler(facts: ModuleFacts, value: ast.expr) -> bool:
    """``DistributedSampler(...)`` not built with ``shuffle=False``."""
    if not isinstance(value, ast.Call) or (callee := dotted_name(value.func)) is None:
        return False
    if facts.qualified(callee).rsplit(".", 1)[-1] != "DistributedSampler":
        return False
    return not any(k.arg == "shuffle" and not (isinstance(k.value, ast.Constant) and k.value.value is True)
                   for k in value.keywords)


def _loader_sampler(facts: ModuleFacts, value: ast.expr, samplers: set[str]) -> str | None:
    """The sampler's name when ``value`` is ``DataLoader(..., sampler=<sampler>)`` (None: built
    inline), else the empty string."""
    if not isinstance(value, ast.Call) or (callee := dotted_name(value.func)) is None:
        return ""
    if facts.qualified(callee).rsplit(".", 1)[-1] != "DataLoader":
        return ""
    for keyword in value.keywords:
        if keyword.arg == "sampler":
            name = dotted_name(keyword.value)
            if name in samplers:
                return name
            return None if _is_shuffling_sampler(facts, keyword.value) else ""
    return ""


def _bind(facts: ModuleFacts, target: ast.expr, value: ast.expr) -> None:
    """Record what kind of object ``target`` holds after ``target = value``."""
    if isinstance(value, ast.Await):
        value = value.value
    if isinstance(target, (ast.Tuple, ast.List)):
        _bind_tuple(facts, target.elts, value)
        return
    name = dotted_name(target)
    if name is None:
        return
    kind = _value_kind(facts, value)
    if kind is not None:
        facts.bindings.setdefault(name, kind)
    if kind is Kind.ACCELERATOR and isinstance(value, ast.Call):
        unlinked = any(k.arg == "step_scheduler_with_optimizer" and isinstance(k.value, ast.Constant)
                       and k.value.value is False for k in value.keywords)
        facts.unlinked_accelerators[name] = unlinked and facts.unlinked_accelerators.get(name, True)
    if kind in (Kind.SCHEDULER, Kind.METRIC_SCHEDULER) and isinstance(value, ast.Call):
        optimizer = _scheduled_optimizer(facts, value)
        facts.schedules[name] = optimizer if facts.schedules.get(name, optimizer) == optimizer else None
    if kind is Kind.SCALER and isinstance(value, ast.Call) and any(
            k.arg == "enabled" and isinstance(k.value, ast.Constant) and k.value.value is False for k in value.keywords):
        facts.disabled_scalers.add(name)


def _scheduled_optimizer(facts: ModuleFacts, call: ast.Call) -> str | None:
    """The optimizer a scheduler's constructor is given: its ``optimizer=`` keyword, else its
    first positional argument of optimizer kind (``get_scheduler("linear", opt, ...)``)."""
    keyword = next((k.value for k in call.keywords if k.arg == "optimizer"), None)
    if keyword is not None:
        return dotted_name(keyword)
    for arg in call.args:
        name = dotted_name(arg)
        if name is not None and facts.kind_of(name) is Kind.OPTIMIZER:
            return name
    return None


def _value_kind(facts: ModuleFacts, value: ast.expr) -> Kind | None:
    if isinstance(value, ast.Call):
        callee = dotted_name(value.func)
        if callee is None:
            return None
        last = callee.rsplit(".", 1)[-1]
        if last == "optimizers" and callee.startswith("self."):
            return Kind.OPTIMIZER
        if last == "lr_schedulers" and callee.startswith("self."):
            return Kind.SCHEDULER
        if last in ("prepare", "setup_optimizers") and value.args:
            return _arg_kind(facts, value.args[0])
        kind = constructor_kind(facts.qualified(callee))
        if kind is Kind.ACCELERATOR and any(k.arg == "gradient_accumulation_steps" for k in value.keywords):
            facts.accelerator_accumulates = True
        return kind
    name = dotted_name(value)
    return facts.bindings.get(name) if name else None


def _arg_kind(facts: ModuleFacts, arg: ast.expr) -> Kind | None:
    name = dotted_name(arg)
    if name is None:
        return _value_kind(facts, arg)
    return facts.bindings.get(name) or kind_by_name(name)


def _bind_tuple(facts: ModuleFacts, targets: list[ast.expr], value: ast.expr) -> None:
    names = [dotted_name(t) for t in targets]
    source = dotted_name(value)
    if source is not None and facts.bindings.get(source) in (Kind.OPTIMIZER, Kind.SCHEDULER):
        for name in names:  # `sch1, sch2 = schedulers` after `schedulers = self.lr_schedulers()`
            if name and name != "_":
                facts.bindings.setdefault(name, facts.bindings[source])
        return
    if not isinstance(value, ast.Call):
        return
    callee = dotted_name(value.func) or ""
    last = callee.rsplit(".", 1)[-1]
    qualified = facts.qualified(callee) if callee else ""
    if qualified.endswith("deepspeed.initialize") or (last == "initialize" and "deepspeed" in qualified):
        for i, name in enumerate(names):
            if name and name != "_":
                facts.bindings.setdefault(name, Kind.ENGINE if i == 0 else Kind.ENGINE_PART)
        return
    if last in ("prepare", "setup", "make_private", "make_private_with_epsilon"):
        args = list(value.args) or [k.value for k in value.keywords]
        for name, arg in zip(names, args, strict=False):
            kind = _arg_kind(facts, arg)
            if name and kind is None and last in ("prepare", "setup") and not _LOADER_NAME.search(name):
                facts.wrapped_models.add(name)
            if name and kind is not None:
                facts.bindings.setdefault(name, kind)
                if last == "prepare":
                    facts.prepared.add(name)
        if last in ("make_private", "make_private_with_epsilon"):
            for name in names:
                if name and kind_by_name(name) is Kind.OPTIMIZER:
                    facts.bindings.setdefault(name, Kind.OPTIMIZER)
        return
    if last in ("optimizers", "lr_schedulers") and callee.startswith("self."):
        for name in names:
            if name:
                facts.bindings.setdefault(name, Kind.OPTIMIZER if last == "optimizers" else Kind.SCHEDULER)
