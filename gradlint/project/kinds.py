"""The kinds of training objects a class keeps on ``self`` and a project function returns.

Read with ``ast`` from the project's modules (through :class:`~gradlint.project.index.ProjectIndex`):
``self.optim = AdamW(...)`` in any method of a class or of its project bases, a factory of the
project (``self.scheduler = build_scheduler(cfg, opt)`` whose returns are schedulers), a tuple
position of ``accelerator.prepare`` / ``deepspeed.initialize`` / ``fabric.setup``, a list, tuple or
dict of such objects (its *element* kind), and the attributes of an instance of a project class
(``self.trainer = Trainer(...)``, then ``self.trainer.optimizer`` has the kind ``Trainer`` gives
its ``self.optimizer``). A call of a project class is read from the class (its bases, or the kind
of what its ``step`` steps), never guessed from the class's name. An attribute assigned objects of
two different kinds is of no kind: the analysis then says nothing that needs it.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from pathlib import Path

from gradlint.names import Kind, constructor_kind, dotted_name, element_kind_by_name, kind_by_name
from gradlint.project.index import ProjectIndex
from gradlint.project.rate_setters import copies_torch_schedule
from gradlint.project.symbols import ClassInfo, Definition, ModuleSymbols, statements
from gradlint.walks import walk

_MAX_DEPTH = 8
"""How many project calls deep a returned object's kind is traced."""

_PREPARERS = frozenset({"prepare", "setup", "setup_optimizers", "make_private", "make_private_with_epsilon"})
"""Calls whose result is their arguments, wrapped (a tuple when there are several)."""

_MAX_REACH = 3
"""How many objects deep an attribute is reached through others (``self.a.b.optimizer``)."""


@dataclass
class ObjectKinds:
    """Kinds of names (``opt``) or attributes (``optim`` for ``self.optim``), and of the elements
    of containers of training objects (``optimizers`` for ``self.optimizers = [g, d]``)."""

    kinds: dict[str, Kind] = field(default_factory=dict)
    elements: dict[str, Kind] = field(default_factory=dict)
    instances: dict[str, ClassInfo | None] = field(default_factory=dict)
    """Names holding an instance of a project class (None: of two different classes)."""
    _clashes: set[str] = field(default_factory=set)

    def add(self, table: dict[str, Kind], name: str, kind: Kind | None) -> None:
        """Record ``name``'s kind; a second, different kind makes it unknown for good."""
        if kind is None or name in self._clashes:
            return
        if table.get(name, kind) is not kind:
            del table[name]
            self._clashes.add(name)
            return
        table[name] = kind

    def add_instance(self, name: str, cls: ClassInfo | None) -> None:
        """Record that ``name`` holds an instance of ``cls``; instances of two classes hold neither."""
        if cls is None:
            return
        self.instances[name] = cls if self.instances.get(name, cls) == cls else None

    def clash(self, name: str) -> None:
        """Make ``name`` of no kind."""
        self.kinds.pop(name, None)
        self.elements.pop(name, None)
        self._clashes.add(name)

    def override(self, own: ObjectKinds) -> None:
        """Take ``own``'s kinds and clashes in place of these (a subclass over its bases)."""
        for table, mine in ((self.kinds, own.kinds), (self.elements, own.elements)):
            for name in own._clashes:
                table.pop(name, None)
            table.update(mine)
        self.instances.update(own.instances)
        self._clashes = (self._clashes - set(own.kinds) - set(own.elements)) | own._clashes

    @property
    def clashes(self) -> frozenset[str]:
        """Names assigned objects of two different kinds: of no kind."""
        return frozenset(self._clashes)


class KindReader:
    """Kinds read from a project, each class and function once."""

    def __init__(self, index: ProjectIndex) -> None:
        self.index = index
        self._classes: dict[ClassInfo, ObjectKinds] = {}
        self._returns: dict[Definition, Kind | None] = {}
        self._nodes: dict[Path, dict[int, ast.FunctionDef | ast.AsyncFunctionDef]] = {}

    def attributes(self, cls: ClassInfo) -> ObjectKinds:
        """The kinds of ``self.<attr>`` for ``cls``: its own assignments over its bases'."""
        if cls in self._classes:
            return self._classes[cls]
        self._classes[cls] = found = ObjectKinds()  # a cycle of bases reads an empty table
        for base in self.project_bases(cls):
            inherited = self.attributes(base)
            for name, kind in inherited.kinds.items():
                found.add(found.kinds, name, kind)
            for name, kind in inherited.elements.items():
                found.add(found.elements, name, kind)
            for name, held in inherited.instances.items():
                found.add_instance(name, held)
        own = ObjectKinds()
        for method in cls.methods.values():
            node = self.node(method)
            if node is not None:
                _Assignments(self, method, own, cls).run(node)
        found.override(own)  # the class's own assignments win over its bases'
        self.reach_through(found)
        return found

    def reach_through(self, found: ObjectKinds, depth: int = 1) -> None:
        """Add to ``found`` the attributes reached through the project instances it holds:
        ``trainer.optimizer`` for ``trainer`` holding a ``Trainer`` whose ``self.optimizer``
        has a kind (a clash there is a clash here)."""
        for name, cls in list(found.instances.items()):
            if cls is None or name.count(".") >= _MAX_REACH - 1:
                continue
            held = self.attributes(cls)
            for attr, kind in held.kinds.items():
                found.add(found.kinds, f"{name}.{attr}", kind)
            for attr, kind in held.elements.items():
                found.add(found.elements, f"{name}.{attr}", kind)
            for attr in held.clashes:
                found.clash(f"{name}.{attr}")

    def held(self, cls: ClassInfo, dotted: str) -> ClassInfo | None:
        """The project class of ``self.<dotted>`` in ``cls`` (``trainer`` or ``trainer.engine``)."""
        found: ClassInfo | None = cls
        for part in dotted.split("."):
            found = self.attributes(found).instances.get(part) if found is not None else None
        return found

    def class_kind(self, cls: ClassInfo, seen: frozenset[ClassInfo] = frozenset()) -> Kind | None:
        """The kind of an instance of project class ``cls``: that of a base outside the project
        (``torch.optim.Optimizer``) or in it, else that of what its ``step`` steps (a wrapper
        whose ``step()`` steps ``self.optimizer`` and runs no backward of its own is an optimizer),
        or a scheduler when that ``step()`` is a copy of torch's (:mod:`gradlint.project.rate_setters`);
        None when none of these tells."""
        if cls in seen:
            return None
        symbols = self.index.symbols(cls.definition.path)
        external = symbols.external if symbols is not None else {}
        for base in cls.bases:
            found = self.index.lookup(cls.definition.path, base)
            if isinstance(found, ClassInfo):
                kind = self.class_kind(found, seen | {cls})
            elif found is None:
                head, _, rest = base.partition(".")
                qualified = external.get(head)
                kind = constructor_kind(f"{qualified}.{rest}" if qualified and rest else qualified or base)
            else:
                kind = None
            if kind is not None:
                return kind
        step = cls.methods.get("step")
        node = self.node(step) if step is not None else None
        if step is None or node is None or not _steps_like_an_optimizer(node):
            return None
        if copies_torch_schedule(node):
            return Kind.SCHEDULER
        own = self.attributes(cls)
        stepped = {own.kinds.get(func.value.attr, None if func.value.attr in own.clashes else kind_by_name(func.value.attr))
                   for func in (call.func for call in walk(node) if isinstance(call, ast.Call))
                   if isinstance(func, ast.Attribute) and func.attr == "step" and isinstance(func.value, ast.Attribute)
                   and _is_self_attribute(func.value)}
        return Kind.OPTIMIZER if Kind.OPTIMIZER in stepped else None

    def returned(self, function: Definition, depth: int = 0) -> Kind | None:
        """The kind of what ``function`` returns, when every ``return`` of it agrees."""
        if function in self._returns:
            return self._returns[function]
        self._returns[function] = None  # cycle-safe: a recursive call returns no kind
        node = self.node(function)
        if node is None or depth > _MAX_DEPTH:
            return None
        local = ObjectKinds()
        reader = _Assignments(self, function, local, self._owner(function), depth)
        reader.run(node)
        kinds = {reader.kind_of(ret.value) for ret in walk(node) if isinstance(ret, ast.Return) and ret.value}
        result = kinds.pop() if len(kinds) == 1 else None
        self._returns[function] = result
        return result

    def project_bases(self, cls: ClassInfo) -> list[ClassInfo]:
        """The bases of ``cls`` defined in the project."""
        found = [self.index.lookup(cls.definition.path, base) for base in cls.bases]
        return [base for base in found if isinstance(base, ClassInfo)]

    def with_bases(self, cls: ClassInfo) -> list[ClassInfo]:
        """``cls`` and its project bases, theirs too, each once (cycle-safe)."""
        seen: dict[str, ClassInfo] = {}
        todo = [cls]
        while todo:
            current = todo.pop()
            key = f"{current.definition.path}:{current.definition.qualname}"
            if key not in seen:
                seen[key] = current
                todo.extend(self.project_bases(current))
        return list(seen.values())

    def _owner(self, function: Definition) -> ClassInfo | None:
        if "." not in function.qualname:
            return None
        found = self.index.lookup(function.path, function.qualname.split(".", 1)[0])
        return found if isinstance(found, ClassInfo) else None

    def node(self, definition: Definition) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
        """The ``ast`` node of ``definition``, None when its module cannot be read."""
        if definition.path not in self._nodes:  # kept by the index per content digest
            found = self.index.derived(definition.path, "function-nodes", self._function_nodes)
            self._nodes[definition.path] = found or {}
        return self._nodes[definition.path].get(definition.line)

    def _function_nodes(self, path: Path, text: str) -> dict[int, ast.FunctionDef | ast.AsyncFunctionDef]:
        tree = self.index.tree(path)
        return {} if tree is None else {
            node.lineno: node for node in statements(tree.body) if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))}


def local_kinds(reader: KindReader, function: Definition, cls: ClassInfo | None,
                node: ast.FunctionDef | ast.AsyncFunctionDef) -> ObjectKinds:
    """The kinds of ``function``'s local names and loop variables (``for opt in self.optimizers``)."""
    reader_of = _Assignments(reader, function, ObjectKinds(), cls)
    reader_of.run(node)
    return reader_of.locals


class _Assignments:
    """One function's assignments, in order: local names and ``self`` attributes get kinds."""

    def __init__(self, reader: KindReader, function: Definition, found: ObjectKinds, cls: ClassInfo | None,
                 depth: int = 0) -> None:
        self.reader = reader
        self.function = function
        self.found = found
        self.cls = cls
        self.depth = depth
        self.locals = ObjectKinds()
        symbols = reader.index.symbols(function.path)
        self.symbols = symbols if symbols is not None else ModuleSymbols(function.path)

    def run(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        arguments = node.args
        for arg in (*arguments.posonlyargs, *arguments.args, *arguments.kwonlyargs):
            annotation = annotated_name(arg.annotation) if arg.annotation is not None else None
            found = self.reader.index.lookup(self.function.path, annotation) if annotation else None
            if isinstance(found, ClassInfo):  # `def after_train_iter(self, runner: Runner)`
                self.locals.add_instance(arg.arg, found)
            # `def __init__(self, models, optimizers, lr_schedulers=None)`: containers handed in
            self.locals.add(self.locals.elements, arg.arg, element_kind_by_name(arg.arg))
        for child in _own_statements(node):
            if isinstance(child, ast.Assign):
                for target in child.targets:
                    self.bind(target, child.value)
            elif isinstance(child, ast.AnnAssign) and child.value is not None:
                self.bind(child.target, child.value)
            elif isinstance(child, (ast.For, ast.AsyncFor)):
                self.bind_element(child.target, child.iter)
        self.reader.reach_through(self.locals)

    def bind(self, target: ast.expr, value: ast.expr) -> None:
        if isinstance(value, ast.Await):
            value = value.value
        if isinstance(target, (ast.Tuple, ast.List)):
            for position, element in enumerate(target.elts):
                self._store(element, self.kind_at(value, position, len(target.elts)), None, None)
            return
        self._store(target, self.kind_of(value), self.element_kind(value), self.instance_of(value))

    def bind_element(self, target: ast.expr, iterable: ast.expr) -> None:
        """``for opt in self.optimizers:``: the loop variable is an element; so are the names
        unpacked from ``zip(optimizers, schedulers)``, the second of ``enumerate(optimizers)``
        and of ``optimizers.items()``."""
        if isinstance(target, (ast.Tuple, ast.List)) and isinstance(iterable, ast.Call):
            sources = _unpacked_sources(iterable, len(target.elts))
            for element, source in zip(target.elts, sources, strict=True):
                self._store(element, self.element_kind(source) if source is not None else None, None, None)
            return
        self._store(target, self.element_kind(iterable), None, None)

    def _store(self, target: ast.expr, kind: Kind | None, element: Kind | None, instance: ClassInfo | None) -> None:
        if isinstance(target, ast.Name):
            self.locals.add(self.locals.kinds, target.id, kind)
            self.locals.add(self.locals.elements, target.id, element)
            self.locals.add_instance(target.id, instance)
        elif _is_self_attribute(target):
            assert isinstance(target, ast.Attribute)
            self.found.add(self.found.kinds, target.attr, kind)
            self.found.add(self.found.elements, target.attr, element)
            self.found.add_instance(target.attr, instance)

    def kind_of(self, value: ast.expr) -> Kind | None:
        """The kind of the object ``value`` evaluates to, when it is known."""
        if isinstance(value, ast.Name):
            return self.locals.kinds.get(value.id)
        if _is_self_attribute(value):
            assert isinstance(value, ast.Attribute)
            return self.found.kinds.get(value.attr) or self._class_kinds().kinds.get(value.attr)
        if isinstance(value, ast.Subscript):
            return self.element_kind(value.value)
        if isinstance(value, ast.Call):
            return self._call_kind(value)
        if isinstance(value, ast.Attribute):  # `self.trainer.optimizer`: an attribute of a project instance
            held = self.instance_of(value.value)
            return self.reader.attributes(held).kinds.get(value.attr) if held is not None else None
        return None

    def instance_of(self, value: ast.expr) -> ClassInfo | None:
        """The project class whose instance ``value`` evaluates to, when it is known."""
        if isinstance(value, ast.Call):
            target = self._project_callee(value.func)
            return target if isinstance(target, ClassInfo) else None
        if isinstance(value, ast.Name):
            return self.locals.instances.get(value.id)
        if _is_self_attribute(value):
            assert isinstance(value, ast.Attribute)
            if value.attr in self.found.instances:
                return self.found.instances[value.attr]
            return self._class_kinds().instances.get(value.attr)
        if isinstance(value, ast.Attribute):
            held = self.instance_of(value.value)
            return self.reader.attributes(held).instances.get(value.attr) if held is not None else None
        return None

    def element_kind(self, value: ast.expr) -> Kind | None:
        """The kind every element of the container ``value`` has."""
        if isinstance(value, (ast.List, ast.Tuple, ast.Set)):
            kinds = {self.kind_of(element) for element in value.elts}
            return kinds.pop() if len(kinds) == 1 else None
        if isinstance(value, ast.Dict):
            kinds = {self.kind_of(element) for element in value.values}
            return kinds.pop() if len(kinds) == 1 else None
        if isinstance(value, ast.Call) and _callee(value) in ("values", "list", "tuple"):
            inner = value.func.value if isinstance(value.func, ast.Attribute) else next(iter(value.args), None)
            return self.element_kind(inner) if inner is not None else None
        if isinstance(value, ast.Name):
            return self.locals.elements.get(value.id)
        if _is_self_attribute(value):
            assert isinstance(value, ast.Attribute)
            return self.found.elements.get(value.attr) or self._class_kinds().elements.get(value.attr)
        if isinstance(value, ast.Attribute):
            held = self.instance_of(value.value)
            return self.reader.attributes(held).elements.get(value.attr) if held is not None else None
        return None

    def kind_at(self, value: ast.expr, position: int, count: int) -> Kind | None:
        """The kind of the ``position``-th of ``count`` names unpacked from ``value``."""
        if isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == count:
            return self.kind_of(value.elts[position])
        if not isinstance(value, ast.Call):
            return None
        qualified = self._qualified(value.func)
        if qualified is not None and qualified.endswith("deepspeed.initialize"):
            return Kind.ENGINE if position == 0 else Kind.ENGINE_PART
        if _callee(value) in _PREPARERS and len(value.args) == count:
            return self.kind_of(value.args[position])
        return None

    def _call_kind(self, call: ast.Call) -> Kind | None:
        if _callee(call) in _PREPARERS and len(call.args) == 1:
            return self.kind_of(call.args[0])
        target = self._project_callee(call.func)
        if isinstance(target, ClassInfo):  # read from the class, not guessed from its name
            return self.reader.class_kind(target)
        qualified = self._qualified(call.func)
        if qualified is not None:
            kind = constructor_kind(qualified)
            if kind is not None:
                return kind
        if isinstance(target, Definition):
            return self.reader.returned(target, self.depth + 1)
        return None

    def _project_callee(self, func: ast.expr) -> Definition | ClassInfo | None:
        if _is_self_attribute(func) and self.cls is not None:
            assert isinstance(func, ast.Attribute)
            return self.reader.index.method(self.cls, func.attr)
        dotted = dotted_name(func)
        if dotted is None or dotted.split(".", 1)[0] in self.locals.kinds:
            return None
        return self.reader.index.lookup(self.function.path, dotted)

    def _qualified(self, func: ast.expr) -> str | None:
        """The callee's name qualified through the module's imports from outside the project."""
        dotted = dotted_name(func)
        if dotted is None:
            return None
        head, _, rest = dotted.partition(".")
        base = self.symbols.external.get(head)
        if base is None:
            return dotted if head not in self.symbols.imports and head not in self.locals.kinds else None
        return f"{base}.{rest}" if rest else base

    def _class_kinds(self) -> ObjectKinds:
        return self.reader.attributes(self.cls) if self.cls is not None else ObjectKinds()


def _own_statements(function: ast.FunctionDef | ast.AsyncFunctionDef) -> list[ast.stmt]:
    """The function's statements in order, nested blocks included, nested functions and classes not."""
    found: list[ast.stmt] = []
    stack = list(reversed(function.body))
    while stack:
        statement = stack.pop()
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        found.append(statement)
        for name in ("orelse", "finalbody", "body"):
            block = getattr(statement, name, None)
            if isinstance(block, list):
                stack.extend(reversed([s for s in block if isinstance(s, ast.stmt)]))
        for handler in getattr(statement, "handlers", []):
            stack.extend(reversed(handler.body))
    return found


def _steps_like_an_optimizer(step: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """A ``step(self)`` (or ``step(self, closure=None)``) that runs no backward: an optimizer's
    step, not a trainer's ``step(batch)``."""
    arguments = step.args
    named = [*arguments.posonlyargs, *arguments.args]
    if len(named) > 2 or (len(named) == 2 and len(arguments.defaults) < 1):
        return False
    return not any(isinstance(n, ast.Attribute) and n.attr in ("backward", "manual_backward") for n in walk(step))


def _unpacked_sources(iterable: ast.Call, count: int) -> list[ast.expr | None]:
    """What each of ``count`` loop names unpacked from ``iterable`` is an element of."""
    func = _callee(iterable)
    args = iterable.args
    if func == "zip" and isinstance(iterable.func, ast.Name) and len(args) == count:
        return list(args)
    if func == "enumerate" and isinstance(iterable.func, ast.Name) and args and count == 2:
        return [None, args[0]]
    if func == "items" and isinstance(iterable.func, ast.Attribute) and not args and count == 2:
        return [None, ast.Call(ast.Attribute(iterable.func.value, "values", ast.Load()), [], [])]
    return [None] * count


def annotated_name(annotation: ast.expr) -> str | None:
    """The dotted class name an annotation names: ``Runner``, ``Optional[sched.Warmup]``,
    ``Warmup | None``, ``"Warmup"``; None for anything else."""
    if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
        try:
            annotation = ast.parse(annotation.value, mode="eval").body
        except SyntaxError:
            return None
    if isinstance(annotation, ast.Subscript) and dotted_name(annotation.value) in ("Optional", "typing.Optional"):
        annotation = annotation.slice
    if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
        sides = [s for s in (annotation.left, annotation.right) if not (isinstance(s, ast.Constant) and s.value is None)]
        annotation = sides[0] if len(sides) == 1 else annotation
    return dotted_name(annotation)


def _is_self_attribute(node: ast.expr) -> bool:
    return isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self"


def _callee(call: ast.Call) -> str | None:
    func = call.func
    if isinstance(func, ast.Attribute):
        return func.attr
    return func.id if isinstance(func, ast.Name) else None

