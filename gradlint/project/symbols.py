"""What one module defines and imports, read with ``ast``: a pure function of its text.

Names bound by imports become :class:`Target` s (a module file plus an attribute path in it);
functions, classes (with their bases as written) and methods become :class:`Definition` s.
A name bound twice to different things is ambiguous and dropped: the analysis then says
nothing about calls through it.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from gradlint.names import dotted_name
from gradlint.project.layout import module_file, search_bases, within


@dataclass(frozen=True)
class Target:
    """What an imported name stands for: module ``path`` itself (``attribute`` empty) or a
    (dotted) attribute of it; ``module`` is the dotted module name as imported."""

    path: Path
    attribute: str
    module: str


@dataclass(frozen=True)
class Definition:
    """A function, method or class written in ``path``: ``qualname`` is ``f``, ``C`` or ``C.m``."""

    path: Path
    qualname: str
    line: int
    end_line: int


@dataclass(frozen=True)
class ClassInfo:
    """A class: where it is, the dotted names of its bases as written, its methods by name."""

    definition: Definition
    bases: tuple[str, ...]
    methods: dict[str, Definition] = field(hash=False)


@dataclass
class ModuleSymbols:
    """The names a module binds at its top level (and the imports of its functions)."""

    path: Path
    imports: dict[str, Target] = field(default_factory=dict)
    functions: dict[str, Definition] = field(default_factory=dict)
    classes: dict[str, ClassInfo] = field(default_factory=dict)
    external: dict[str, str] = field(default_factory=dict)  # names imported from outside: local -> qualified
    unresolved: set[str] = field(default_factory=set)  # names bound more than one way
    stars: list[Path] = field(default_factory=list)  # project modules it imports `*` from, in order
    absent: set[Path] = field(default_factory=set)  # module files its imports looked for and did not find


def read_symbols(tree: ast.Module, path: Path, root: Path) -> ModuleSymbols:
    """The symbols of the module at ``path`` (parsed as ``tree``) in the project under ``root``."""
    symbols = ModuleSymbols(path)
    clashes: set[str] = set()
    folders: list[Path] | None = None  # where absolute imports are looked up: the same for every import
    for node in statements(tree.body):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            if folders is None:
                folders = list(search_bases(path, root))
            targets = _import_targets(node, path, root, folders, symbols.absent)
            symbols.stars += _star_module(node, path, root, folders, symbols.absent)
            for local, target in targets:
                _bind(symbols.imports, local, target, clashes)
            inside = {local for local, _ in targets}
            for local, qualified in _external_names(node):
                if local not in inside:
                    _bind(symbols.external, local, qualified, clashes)
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            _bind(symbols.functions, node.name, _definition(node, path, node.name), clashes)
        elif isinstance(node, ast.ClassDef):
            methods = {item.name: _definition(item, path, f"{node.name}.{item.name}") for item in node.body
                       if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef))}
            bases = tuple(name for name in map(_base_name, node.bases) if name)
            _bind(symbols.classes, node.name, ClassInfo(_definition(node, path, node.name), bases, methods), clashes)
    for name in clashes:
        for table in (symbols.imports, symbols.functions, symbols.classes, symbols.external):
            table.pop(name, None)
    symbols.unresolved |= clashes
    return symbols


def _base_name(node: ast.expr) -> str | None:
    """A base as its dotted name, a generic one's too (``Mixin[T]`` is class ``Mixin``)."""
    return dotted_name(node.value if isinstance(node, ast.Subscript) else node)


def _star_module(node: ast.Import | ast.ImportFrom, path: Path, root: Path, bases: list[Path],
                 absent: set[Path]) -> list[Path]:
    """The project module that ``from m import *`` reads its names from, if any."""
    if not isinstance(node, ast.ImportFrom) or not any(alias.name == "*" for alias in node.names):
        return []
    if node.level:
        found = module_file(_relative_base(path, node.level), node.module or "", absent)
    else:
        found = _locate(node.module or "", bases, root, absent)
    return [found] if found is not None and within(found, root) else []


def statements(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Every statement of ``body`` and of the blocks nested in it (imports are statements:
    expressions, most of a tree's nodes, are not walked)."""
    stack = list(reversed(body))
    while stack:
        node = stack.pop()
        yield node
        blocks: list[list[ast.stmt]] = [getattr(node, name, None) or [] for name in _BLOCKS]
        blocks += [handler.body for handler in getattr(node, "handlers", None) or []]
        blocks += [case.body for case in getattr(node, "cases", None) or []]
        for block in reversed(blocks):
            stack.extend(reversed(block))


_BLOCKS = ("body", "orelse", "finalbody")


def _bind(table: dict, name: str, value: object, clashes: set[str]) -> None:
    if name in clashes:
        return
    if name in table and table[name] != value:
        clashes.add(name)
        return
    table[name] = value


def _definition(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef, path: Path, qualname: str) -> Definition:
    return Definition(path, qualname, node.lineno, node.end_lineno or node.lineno)


def _import_targets(node: ast.Import | ast.ImportFrom, path: Path, root: Path, bases: list[Path],
                    absent: set[Path]) -> list[tuple[str, Target]]:
    """``(local name, target)`` for each name the statement binds to a module of the project
    (the project files looked for and not found are added to ``absent``)."""
    found: list[tuple[str, Target]] = []
    if isinstance(node, ast.Import):
        for alias in node.names:
            if alias.asname:  # `import a.b as m`: m is module a.b
                located = _locate(alias.name, bases, root, absent)
                if located:
                    found.append((alias.asname, Target(located, "", alias.name)))
            else:  # `import a.b`: a is bound; a.b is reached through it
                head = alias.name.split(".", 1)[0]
                located = _locate(head, bases, root, absent)
                if located:
                    found.append((head, Target(located, "", head)))
        return found
    base = _relative_base(path, node.level) if node.level else None
    module = node.module or ""
    for alias in node.names:
        if alias.name == "*":
            continue
        local = alias.asname or alias.name
        submodule = f"{module}.{alias.name}" if module else alias.name
        if base is not None:
            as_module = module_file(base, submodule, absent)
            owner = module_file(base, module, absent)
            dotted = "." * node.level + submodule
        else:
            as_module = _locate(submodule, bases, root, absent)
            owner = _locate(module, bases, root, absent) if module else None
            dotted = submodule
        if as_module is not None and within(as_module, root):
            found.append((local, Target(as_module, "", dotted)))
        elif owner is not None and within(owner, root):
            found.append((local, Target(owner, alias.name, dotted.rsplit(".", 1)[0] if module else dotted)))
    return found


def _external_names(node: ast.Import | ast.ImportFrom) -> list[tuple[str, str]]:
    """``(local name, qualified name)`` for each name the statement binds, as Python spells it."""
    if isinstance(node, ast.Import):
        return [(alias.asname or alias.name.split(".", 1)[0], alias.name if alias.asname else alias.name.split(".", 1)[0])
                for alias in node.names]
    if node.level:
        return []  # a relative import names the project; a miss there is not an outside name
    return [(alias.asname or alias.name, f"{node.module}.{alias.name}") for alias in node.names
            if alias.name != "*" and node.module]


def _relative_base(path: Path, level: int) -> Path:
    base = path.absolute().parent
    for _ in range(level - 1):
        base = base.parent
    return base


def _locate(dotted: str, bases: list[Path], root: Path, absent: set[Path]) -> Path | None:
    """The project file of absolute module ``dotted`` imported from a module whose
    :func:`~gradlint.project.layout.search_bases` are ``bases``, if any (the project files
    looked for and not found are added to ``absent``)."""
    for base in bases:
        missing: set[Path] = set()
        found = module_file(base, dotted, missing)
        absent |= {p for p in missing if within(p, root)}
        if found is not None and within(found, root):
            return found
    return None
