"""Loaders whose sampler is a ``DistributedSampler`` built elsewhere in the project.

A loop's loader may come from a project function or method of another module
(``self.data_silo.get_data_loader("train")`` returning ``self.loaders[name]``, filled in another
method with ``DataLoader(..., sampler=sampler_train)``). This reader follows such a value with
``ast`` through local and ``self`` assignments, project calls (a constant argument bound to its
parameter), dict literals indexed by a constant key and project subclasses of ``DataLoader``,
to the sampler each path builds. A value is *distributed* when some path builds a shuffling
``DistributedSampler`` and every other path builds a plain sampler, no sampler, or ``None``
(``DistributedSampler(ds) if ddp else RandomSampler(ds)``: in a distributed run the loader is a
distributed one); anything it cannot follow (a parameter, ``**kwargs``, an unknown call, a
sampler of an unknown kind, ``shuffle=`` not a constant) makes the whole value unknown.
"""

from __future__ import annotations

import ast
import enum
from collections.abc import Callable
from dataclasses import dataclass, field

from gradlint.names import dotted_name
from gradlint.project.kinds import KindReader
from gradlint.project.symbols import ClassInfo, Definition, ModuleSymbols
from gradlint.walks import walk

_MAX_DEPTH = 10
"""How many assignments, returns and calls deep a value is followed."""

_PLAIN_SAMPLERS = frozenset({"RandomSampler", "SequentialSampler", "SubsetRandomSampler", "WeightedRandomSampler"})
"""torch samplers with no epoch of their own."""

_WRAPPERS = frozenset({"enumerate", "tqdm", "tqdm.tqdm", "tqdm.auto.tqdm"})
"""Calls a ``for`` iterates a loader through."""


class Value(enum.Enum):
    """What a traced expression is known to be."""

    DISTRIBUTED = "distributed"
    PLAIN = "plain"
    UNKNOWN = "unknown"


def _either(values: list[Value]) -> Value:
    """One of several alternatives (branches, assignments, returns): unknown if any is."""
    if not values or Value.UNKNOWN in values:
        return Value.UNKNOWN
    return Value.DISTRIBUTED if Value.DISTRIBUTED in values else Value.PLAIN


@dataclass(frozen=True)
class _Scope:
    """A function being read: its definition, class, node and the constants its parameters hold."""

    definition: Definition
    cls: ClassInfo | None
    node: ast.FunctionDef | ast.AsyncFunctionDef
    constants: dict[str, ast.expr] = field(default_factory=dict, hash=False)


_Judge = Callable[[ast.expr, "_Scope", int], Value]


class LoaderTracer:
    """Traces loaders and samplers through one project (each function's assignments read once)."""

    def __init__(self, kinds: KindReader) -> None:
        self.kinds = kinds
        self.index = kinds.index
        self._assigned: dict[Definition, dict[str, list[ast.expr]]] = {}

    def distributed_names(self, definition: Definition, cls: ClassInfo | None,
                          node: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
        """The names (``loader``, ``self.loader``) a ``for`` nested in another ``for`` of
        ``node`` iterates that are distributed loaders traced through the project."""
        scope = _Scope(definition, cls, node)
        found = set()
        for name in _iterated_names(node, self._assignments(scope)):
            expr = ast.parse(name, mode="eval").body
            if self.loader(expr, scope, _MAX_DEPTH) is Value.DISTRIBUTED:
                found.add(name)
        return found

    def reaches_set_epoch(self, definition: Definition, cls: ClassInfo | None,
                          node: ast.FunctionDef | ast.AsyncFunctionDef, depth: int = 3) -> bool:
        """Whether a call of ``node`` reaches (``depth`` calls deep) a project function, method
        or class of another module whose source calls ``set_epoch``: it may set the sampler's epoch."""
        scope = _Scope(definition, cls, node)
        for call in walk(node):
            target = self._callee(call.func, scope) if isinstance(call, ast.Call) else None
            if target is None:
                continue
            where = target.definition if isinstance(target, ClassInfo) else target
            if where.path == definition.path and where.qualname.split(".")[0] == definition.qualname.split(".")[0]:
                continue  # the unit's own class (its module's text was read for `set_epoch` already)
            if _names_set_epoch(self.index.text(where.path), where):
                return True
            inner = self.kinds.node(where) if isinstance(target, Definition) and depth > 1 else None
            if inner is not None and self.reaches_set_epoch(where, self._owner(where), inner, depth - 1):
                return True
        return False

    def loader(self, expr: ast.expr, scope: _Scope, depth: int) -> Value:
        """Whether ``expr``, read in ``scope``, is a distributed loader."""
        if depth <= 0:
            return Value.UNKNOWN
        if isinstance(expr, ast.Constant) and expr.value is None:
            return Value.PLAIN
        if isinstance(expr, ast.IfExp):
            return _either([self.loader(expr.body, scope, depth), self.loader(expr.orelse, scope, depth)])
        if isinstance(expr, ast.Call):
            return self._loader_call(expr, scope, depth)
        if isinstance(expr, ast.Subscript):
            return self._keyed(expr, scope, depth)
        return self._alternatives(expr, scope, depth, self.loader)

    def sampler(self, expr: ast.expr, scope: _Scope, depth: int) -> Value:
        """Whether ``expr``, read in ``scope``, is a shuffling ``DistributedSampler``."""
        if depth <= 0:
            return Value.UNKNOWN
        if isinstance(expr, ast.Constant) and expr.value is None:
            return Value.PLAIN
        if isinstance(expr, ast.IfExp):
            return _either([self.sampler(expr.body, scope, depth), self.sampler(expr.orelse, scope, depth)])
        if isinstance(expr, ast.Call):
            last = (self._qualified(expr.func, scope) or "").rsplit(".", 1)[-1]
            if last in _PLAIN_SAMPLERS:
                return Value.PLAIN
            if last != "DistributedSampler":
                return Value.UNKNOWN
            shuffle = next((k.value for k in expr.keywords if k.arg == "shuffle"), None)
            if shuffle is None or (isinstance(shuffle, ast.Constant) and shuffle.value is True):
                return Value.DISTRIBUTED
            return Value.PLAIN if isinstance(shuffle, ast.Constant) else Value.UNKNOWN
        return self._alternatives(expr, scope, depth, self.sampler)

    def _alternatives(self, expr: ast.expr, scope: _Scope, depth: int, judge: _Judge) -> Value:
        """A local name or ``self`` attribute: every value assigned to it."""
        name = dotted_name(expr)
        if name is None:
            return Value.UNKNOWN
        if name in scope.constants or name in _parameters(scope.node):
            return Value.UNKNOWN  # a parameter holds what the caller passes, whatever the body assigns
        if name.startswith("self.") and name.count(".") == 1 and scope.cls is not None:
            found = self._attribute_values(scope.cls, name)
            return _either([judge(value, where, depth - 1) for value, where in found])
        values = self._assignments(scope).get(name, [])
        return _either([judge(value, scope, depth - 1) for value in values])

    def _loader_call(self, call: ast.Call, scope: _Scope, depth: int) -> Value:
        if any(k.arg is None for k in call.keywords) or any(isinstance(a, ast.Starred) for a in call.args):
            return Value.UNKNOWN  # `DataLoader(ds, **kwargs)`: the sampler may be in there
        target = self._callee(call.func, scope)
        if isinstance(target, ClassInfo):
            return self._built_loader(call, scope, depth, 1) if self._is_loader_class(target, depth) else Value.UNKNOWN
        if isinstance(target, Definition):
            return self._returned(target, call, depth - 1)
        if (self._qualified(call.func, scope) or "").rsplit(".", 1)[-1] == "DataLoader":
            return self._built_loader(call, scope, depth, 3)  # torch's sampler is its 4th parameter
        return Value.UNKNOWN

    def _built_loader(self, call: ast.Call, scope: _Scope, depth: int, positional: int) -> Value:
        """``DataLoader(..., sampler=S)``: what ``S`` is; no sampler (and no more than
        ``positional`` positional arguments, which cannot be it) is a plain loader."""
        if any(k.arg == "batch_sampler" for k in call.keywords):
            return Value.UNKNOWN
        sampler = next((k.value for k in call.keywords if k.arg == "sampler"), None)
        if sampler is None:
            return Value.PLAIN if len(call.args) <= positional else Value.UNKNOWN
        return self.sampler(sampler, scope, depth - 1)

    def _returned(self, function: Definition, call: ast.Call, depth: int) -> Value:
        """What every ``return`` of a project function gives, its constant arguments bound."""
        node = self.kinds.node(function)
        if node is None:
            return Value.UNKNOWN
        scope = _Scope(function, self._owner(function), node, _bound_constants(node, call))
        returns = [r.value for r in _own_returns(node)]
        if not returns or any(r is None for r in returns):
            return Value.UNKNOWN
        return _either([self.loader(r, scope, depth) for r in returns if r is not None])

    def _keyed(self, expr: ast.Subscript, scope: _Scope, depth: int) -> Value:
        """``self.loaders["train"]`` (or through a parameter holding the key): the entry of
        the dict literal every assignment of ``self.loaders`` is."""
        key = expr.slice
        if isinstance(key, ast.Name) and key.id in scope.constants:
            key = scope.constants[key.id]
        name = dotted_name(expr.value)
        if not isinstance(key, ast.Constant) or name is None or scope.cls is None or not name.startswith("self.") \
                or name.count(".") != 1:
            return Value.UNKNOWN
        values = self._attribute_values(scope.cls, name)
        entries = []
        for value, where in values:
            if not isinstance(value, ast.Dict):
                return Value.UNKNOWN
            entry = next((v for k, v in zip(value.keys, value.values, strict=True)
                          if isinstance(k, ast.Constant) and k.value == key.value), None)
            if entry is None:
                return Value.UNKNOWN
            entries.append(self.loader(entry, where, depth - 1))
        return _either(entries)

    def _attribute_values(self, cls: ClassInfo, name: str) -> list[tuple[ast.expr, _Scope]]:
        """Every value assigned to ``self.<attr>`` in the methods of ``cls`` and its project
        bases, each with the method it is read in (an ``x[k] = v`` store makes it unknown)."""
        found: list[tuple[ast.expr, _Scope]] = []
        for owner in [cls, *self.kinds.project_bases(cls)]:
            for method in owner.methods.values():
                node = self.kinds.node(method)
                if node is None:
                    continue
                scope = _Scope(method, owner, node)
                found.extend((value, scope) for value in self._assignments(scope).get(name, []))
                if name in _stored_items(node):
                    return []
        return found

    def _assignments(self, scope: _Scope) -> dict[str, list[ast.expr]]:
        if scope.definition not in self._assigned:
            table: dict[str, list[ast.expr]] = {}
            for node in walk(scope.node):
                if isinstance(node, ast.Assign):
                    for target in node.targets:
                        _record(table, target, node.value)
                elif isinstance(node, ast.AnnAssign) and node.value is not None:
                    _record(table, node.target, node.value)
                elif isinstance(node, (ast.AugAssign, ast.For, ast.AsyncFor, ast.With, ast.NamedExpr)):
                    for rebound in _other_targets(node):
                        table.setdefault(rebound, []).append(ast.Constant(...))  # bound some other way
            self._assigned[scope.definition] = table
        return self._assigned[scope.definition]

    def _callee(self, func: ast.expr, scope: _Scope) -> Definition | ClassInfo | None:
        """The project function, method or class a call names (``self.m``, ``self.x.m``, ``f``)."""
        name = dotted_name(func)
        if name is None:
            return None
        head, _, rest = name.partition(".")
        if head == "self" and scope.cls is not None and rest:
            owner, _, method = rest.rpartition(".")
            cls = self.kinds.held(scope.cls, owner) if owner else scope.cls
            return self.index.method(cls, method) if cls is not None else None
        if head in self._assignments(scope) or head in _parameters(scope.node):
            return None
        return self.index.lookup(scope.definition.path, name)

    def _qualified(self, func: ast.expr, scope: _Scope) -> str | None:
        """The callee's name qualified through its module's imports from outside the project."""
        name = dotted_name(func)
        symbols = self.index.symbols(scope.definition.path) or ModuleSymbols(scope.definition.path)
        if name is None:
            return None
        head, _, rest = name.partition(".")
        base = symbols.external.get(head)
        if base is None:
            return name if head not in symbols.imports else None
        return f"{base}.{rest}" if rest else base

    def _is_loader_class(self, cls: ClassInfo, depth: int) -> bool:
        """A project subclass of torch's ``DataLoader`` that keeps its constructor's sampler
        (no ``__init__`` of its own, or one that hands ``sampler`` on through ``super().__init__``)."""
        if depth <= 0 or "__iter__" in cls.methods:
            return False
        init = cls.methods.get("__init__")
        if init is not None and not _hands_on_sampler(self.kinds.node(init)):
            return False
        symbols = self.index.symbols(cls.definition.path)
        for base in cls.bases:
            found = self.index.lookup(cls.definition.path, base)
            if isinstance(found, ClassInfo):
                if self._is_loader_class(found, depth - 1):
                    return True
            elif symbols is not None:
                head, _, rest = base.partition(".")
                qualified = symbols.external.get(head)
                full = f"{qualified}.{rest}" if qualified and rest else qualified or base
                if full.rsplit(".", 1)[-1] == "DataLoader" and (qualified or head not in symbols.imports):
                    return True
        return False

    def _owner(self, function: Definition) -> ClassInfo | None:
        if "." not in function.qualname:
            return None
        found = self.index.lookup(function.path, function.qualname.split(".", 1)[0])
        return found if isinstance(found, ClassInfo) else None


def _names_set_epoch(text: str | None, where: Definition) -> bool:
    """Whether the lines of ``where`` in its module's ``text`` call ``set_epoch``."""
    if text is None or "set_epoch" not in text:
        return False
    return any("set_epoch" in line for line in text.splitlines()[where.line - 1:where.end_line])


def _iterated_names(node: ast.FunctionDef | ast.AsyncFunctionDef, assigned: dict[str, list[ast.expr]]) -> set[str]:
    """Names a ``for`` nested in another ``for`` iterates, through ``enumerate``/``tqdm`` and a
    progress bar assigned once."""
    found = set()
    for outer in walk(node):
        if not isinstance(outer, (ast.For, ast.AsyncFor)):
            continue
        for inner in walk(outer):
            if inner is outer or not isinstance(inner, (ast.For, ast.AsyncFor)):
                continue
            source = inner.iter
            for _ in range(2):  # `enumerate(pbar)` with `pbar = tqdm(loader)`
                while isinstance(source, ast.Call) and dotted_name(source.func) in _WRAPPERS and source.args:
                    source = source.args[0]
                name = dotted_name(source)
                bound = assigned.get(name, []) if name else []
                if not (len(bound) == 1 and isinstance(bound[0], ast.Call) and dotted_name(bound[0].func) in _WRAPPERS):
                    break
                source = bound[0]
            name = dotted_name(source)
            if name is not None:
                found.add(name)
    return found


def _record(table: dict[str, list[ast.expr]], target: ast.expr, value: ast.expr) -> None:
    if isinstance(target, (ast.Tuple, ast.List)):
        for element in target.elts:  # an unpacked element: not followed
            name = dotted_name(element)
            if name is not None:
                table.setdefault(name, []).append(ast.Constant(...))
        return
    name = dotted_name(target)
    if name is not None:
        table.setdefault(name, []).append(value)


def _other_targets(node: ast.AST) -> list[str]:
    targets: list[ast.expr] = []
    if isinstance(node, (ast.AugAssign, ast.For, ast.AsyncFor, ast.NamedExpr)):
        targets = [node.target]
    elif isinstance(node, ast.With):
        targets = [item.optional_vars for item in node.items if item.optional_vars is not None]
    names = []
    for target in targets:
        for part in ast.walk(target):
            name = dotted_name(part) if isinstance(part, (ast.Name, ast.Attribute)) else None
            if name is not None:
                names.append(name)
    return names


def _stored_items(node: ast.AST) -> set[str]:
    """Names whose items a function stores into (``self.loaders["train"] = ...``)."""
    found = set()
    for child in walk(node):
        targets = child.targets if isinstance(child, ast.Assign) else []
        for target in targets:
            if isinstance(target, ast.Subscript) and (name := dotted_name(target.value)) is not None:
                found.add(name)
    return found


def _parameters(node: ast.FunctionDef | ast.AsyncFunctionDef) -> set[str]:
    arguments = node.args
    return {a.arg for a in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs)}


def _bound_constants(node: ast.FunctionDef | ast.AsyncFunctionDef, call: ast.Call) -> dict[str, ast.expr]:
    """The callee's parameters bound to constants by ``call`` (``get_data_loader("train")``);
    every other parameter is bound to an unknown value (a non-constant placeholder)."""
    arguments = node.args
    named = [a.arg for a in (*arguments.posonlyargs, *arguments.args)]
    if named and named[0] in ("self", "cls") and isinstance(call.func, ast.Attribute):
        named = named[1:]
    bound: dict[str, ast.expr] = {name: ast.Name("?") for name in _parameters(node)}
    for name, arg in zip(named, call.args, strict=False):
        if isinstance(arg, ast.Constant):
            bound[name] = arg
    for keyword in call.keywords:
        if keyword.arg is not None and isinstance(keyword.value, ast.Constant):
            bound[keyword.arg] = keyword.value
    return bound


def _own_returns(function: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.Return]:
    """The ``return`` statements of ``function`` itself (not of nested functions)."""
    found: list[ast.Return] = []
    stack: list[ast.AST] = list(function.body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Return):
            found.append(node)
        elif not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            stack.extend(ast.iter_child_nodes(node))
    return found


def _hands_on_sampler(init: ast.FunctionDef | ast.AsyncFunctionDef | None) -> bool:
    """An ``__init__`` that passes its ``sampler`` (or ``**kwargs``) on to ``super().__init__``."""
    if init is None:
        return False
    for call in walk(init):
        if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and call.func.attr == "__init__":
            if any(k.arg is None or (k.arg == "sampler" and dotted_name(k.value) == "sampler") for k in call.keywords):
                return True
    return False
