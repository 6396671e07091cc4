"""Every definition of a method name in the project, for calls on a receiver of unknown class
(``self.task.train_step(...)`` where ``self.task`` is an unannotated constructor parameter).

The project's files are listed once per lint and each file's indented ``def`` names are read
from its text once per content digest; only the few files defining the name are parsed. A name
that some file defines where no class method of the module's top level is (a nested class, a
function inside a function), that a file which cannot be parsed defines, or that more than
:data:`_MAX_FILES` files define, has no sites: the caller then says nothing. A file added later
that defines a name some files define, or a file removed, is noticed by a cached result (the
files that define it and the project's listing are recorded). Not noticed: the first definition
of a name no file defined (the cached result stays silent), and an existing file edited to define
the name where it did not (recording every file's digest would make every warm run read the
whole project).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

from gradlint.project.index import ProjectIndex
from gradlint.project.layout import project_root, python_files
from gradlint.project.symbols import ClassInfo, Definition
from gradlint.source import SourceError, decode, read_source_file

_MAX_FILES = 16
"""More files than this defining one method name: too common a name to dispatch on."""
_INDENTED_DEF = re.compile(r"^[ \t]+(?:async[ \t]+)?def[ \t]+(\w+)[ \t]*\(", re.MULTILINE)
_NAMES: dict[Path, tuple[tuple[int, int], frozenset[str]]] = {}
"""File -> ((size, modification time), the names of its indented ``def`` s)."""


@dataclass(frozen=True)
class MethodSite:
    """One project class's own definition of a method: the class, the method and its syntax,
    and whether its body calls ``super().<name>(...)``."""

    cls: ClassInfo
    definition: Definition
    node: ast.FunctionDef | ast.AsyncFunctionDef
    calls_super: bool

    def accepts(self, positional: int, keywords: frozenset[str], starred: bool) -> bool:
        """Whether a bound call with ``positional`` arguments and ``keywords`` can reach this
        method (``starred``: the call also passes ``*args`` / ``**kwargs``, which may bind any
        parameter left)."""
        args = self.node.args
        named = [*args.posonlyargs, *args.args]
        if not any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in self.node.decorator_list):
            named = named[1:]
        if positional > len(named) and args.vararg is None:
            return False
        keyword_names = {a.arg for a in [*args.args, *args.kwonlyargs]} - {a.arg for a in args.posonlyargs}
        if args.kwarg is None and not keywords <= keyword_names:
            return False
        if starred:
            return True
        bound = {a.arg for a in named[:positional]} | keywords
        required = [a.arg for a in named[:len(named) - len(args.defaults)]]
        required += [a.arg for a, d in zip(args.kwonlyargs, args.kw_defaults, strict=True) if d is None]
        return all(name in bound for name in required)


class MethodSites:
    """The project of one linted module, listed on first use."""

    def __init__(self, index: ProjectIndex, linted: Path) -> None:
        self.index = index
        self.root = project_root(linted)
        self._listing: tuple[list[Path] | None] | None = None  # (the files, None past the limit) once listed
        self._found: dict[str, list[MethodSite] | None] = {}

    def named(self, name: str) -> list[MethodSite] | None:
        """Every class method called ``name`` in the project; None when one cannot be told."""
        if name not in self._found:
            self._found[name] = self._sites(name)
        if self._found[name] and self._listing is not None:  # the verdict rests on every definition
            self.index.note_listing(self.root, self._listing[0])
        return self._found[name]

    def _sites(self, name: str) -> list[MethodSite] | None:
        files = [path for path in self._listed() if name in self._names(path)]
        if len(files) > _MAX_FILES:
            return None
        sites: list[MethodSite] = []
        for path in files:
            tree, symbols = self.index.tree(path), self.index.symbols(path)
            if tree is None or symbols is None:
                return None
            own = _class_methods(tree, name)
            every = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == name]
            if len(own) != len([n for n in every if n.col_offset > 0]):
                return None  # a definition the index cannot place: nested in a function or class
            for class_name, node in own:
                cls = symbols.classes.get(class_name)
                if cls is None or cls.methods.get(name) is None or cls.methods[name].line != node.lineno:
                    return None  # a class bound twice, a method redefined
                sites.append(MethodSite(cls, cls.methods[name], node, _calls_super(node)))
        return sites

    def _listed(self) -> list[Path]:
        """The project's Python files (none past :data:`~gradlint.project.layout.MAX_LISTED_FILES`)."""
        if self._listing is None:
            self._listing = (python_files(self.root),)
        return self._listing[0] or []

    @staticmethod
    def _names(path: Path) -> frozenset[str]:
        """The names of the file's indented ``def`` s, read again only when its size or
        modification time changed (the text is not kept)."""
        try:
            status = path.stat()
            stamp = (status.st_size, status.st_mtime_ns)
            known = _NAMES.get(path)
            if known is None or known[0] != stamp:
                text = decode(read_source_file(path)).text
                known = _NAMES[path] = (stamp, frozenset(_INDENTED_DEF.findall(text)))
        except (OSError, SourceError):
            return frozenset()
        return known[1]


def _class_methods(tree: ast.Module, name: str) -> list[tuple[str, ast.FunctionDef | ast.AsyncFunctionDef]]:
    """``(class, method)`` for each top-level class of ``tree`` defining ``name`` in its body."""
    return [(node.name, item) for node in tree.body if isinstance(node, ast.ClassDef) for item in node.body
            if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name == name]


def _calls_super(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Whether the method's body calls ``super().<its name>(...)``."""
    return any(isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute) and c.func.attr == node.name
               and isinstance(c.func.value, ast.Call) and isinstance(c.func.value.func, ast.Name)
               and c.func.value.func.id == "super" for c in ast.walk(node))
