"""The project's modules, read once each: follow a dotted name to the function, class or method
it means, across modules, re-exports and class bases defined in the project.

Each module's symbols are a pure function of its text and are kept by content digest, so an
edited helper is read again and an unchanged one never is. Text handed in by an editor (unsaved
buffers) takes the place of the file on disk.
"""

from __future__ import annotations

import ast
import hashlib
from collections import OrderedDict
from collections.abc import Callable, Hashable, Mapping
from pathlib import Path
from typing import TypeVar, cast

from gradlint.project.layout import module_file, project_root
from gradlint.project.symbols import ClassInfo, Definition, ModuleSymbols, read_symbols
from gradlint.source import SourceError, decode, parse_python, read_source_file

T = TypeVar("T")
K = TypeVar("K")
V = TypeVar("V")

_MAX_MODULES = 64
"""How many modules' trees (and screens) an index keeps, the most recently used first: a worker
auditing a large package holds about 130-180 MiB with 32-64 (about 450 MiB with 256), no slower."""

_MAX_HOPS = 32
"""How many modules, re-exports and bases one look-up may pass through (a cycle ends there)."""


def text_digest(text: str) -> str:
    """The content digest of a module's text."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def module_digest(path: Path) -> str | None:
    """The content digest of the module file at ``path`` as it is now; None when unreadable."""
    try:
        return text_digest(decode(read_source_file(path)).text)
    except (OSError, SourceError):
        return None


def _keep(table: OrderedDict[K, V], key: K, value: V) -> None:
    """Store ``key`` last in ``table``, dropping the oldest entries beyond ``_MAX_MODULES``
    (an ordered dict drops its first entry at once; a plain dict's first look-up after many
    deletions walks their leftovers)."""
    table[key] = value
    while len(table) > _MAX_MODULES:
        table.popitem(last=False)


class ProjectIndex:
    """Symbols of the project's modules by path, and look-ups through them."""

    def __init__(self, texts: Mapping[Path, str] | None = None) -> None:
        self._texts = {path.absolute(): (text, text_digest(text)) for path, text in (texts or {}).items()}
        self._by_digest: OrderedDict[tuple[Path, str], tuple[ast.Module, ModuleSymbols] | None] = OrderedDict()
        self._disk: dict[Path, tuple[tuple[int, int], tuple[str, str] | None]] = {}
        self._log: dict[Path, str | None] | None = None
        self._checked: set[tuple[Path, str]] = set()  # symbols whose absent files were checked this lint
        self._derived: OrderedDict[tuple[object, Path, str], object] = OrderedDict()
        self._linted: Path | None = None

    def use_text(self, path: Path, text: str, tree: ast.Module | None = None) -> None:
        """Read ``text`` as the module at ``path`` from now on (the buffer being linted);
        ``tree`` is its ``ast`` tree when the caller has parsed it already."""
        path = path.absolute()
        self._texts[path] = text, text_digest(text)
        key = (path, self._texts[path][1])
        if tree is not None and key not in self._by_digest:
            self._by_digest[key] = tree, read_symbols(tree, path, project_root(path))

    def forget_text(self, path: Path) -> None:
        """Read the module at ``path`` from disk again (its editor buffer was closed)."""
        self._texts.pop(path.absolute(), None)

    def record_reads(self, log: dict[Path, str | None] | None, linted: Path | None = None) -> None:
        """From now on note in ``log`` every module read (path: digest) but ``linted``, and
        every module file an import of a module whose symbols were read looked for and did not
        find (path: None). A new log starts a new lint: symbols kept from an earlier one are
        read again if a file their imports did not find exists now."""
        self._log, self._linted = log, linted.absolute() if linted is not None else None
        if log is not None:
            self._checked.clear()

    def text(self, path: Path) -> str | None:
        """The module's text (an editor's buffer first), None when it cannot be read or decoded.
        A file is read again only when its size or modification time changed."""
        read = self._text(path.absolute())
        if read is not None and self._log is not None and path.absolute() != self._linted:
            self._log[path.absolute()] = read[1]
        return read[0] if read is not None else None

    def _text(self, path: Path) -> tuple[str, str] | None:
        if path in self._texts:
            return self._texts[path]
        try:
            status = path.stat()
        except OSError:
            return None
        stamp = (status.st_size, status.st_mtime_ns)
        known = self._disk.get(path)
        if known is not None and known[0] == stamp:
            return known[1]
        try:
            text = decode(read_source_file(path)).text
            read: tuple[str, str] | None = text, text_digest(text)
        except (OSError, SourceError):
            read = None
        self._disk[path] = (stamp, read)
        return read

    def digest(self, path: Path) -> str | None:
        """The content digest of the module's text (what a cached result that used it records)."""
        read = self._text(path.absolute())
        return read[1] if read is not None else None

    def symbols(self, path: Path) -> ModuleSymbols | None:
        """What the module defines and imports; None when it cannot be read or parsed."""
        read = self._read(path.absolute())
        return read[1] if read else None

    def tree(self, path: Path) -> ast.Module | None:
        """The module's ``ast`` tree; None when it cannot be read or parsed."""
        read = self._read(path.absolute())
        return read[0] if read else None

    def _read(self, path: Path) -> tuple[ast.Module, ModuleSymbols] | None:
        read = self._text(path)
        if read is None:
            return None
        if self._log is not None and path != self._linted:
            self._log[path] = read[1]
        text, key = read[0], (path, read[1])
        fresh = key not in self._checked
        if key in self._by_digest and not (fresh and self._appeared(self._by_digest[key])):
            found = self._by_digest.pop(key)  # kept as the most recently used
        else:
            try:
                tree = parse_python(text)
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                found = None
            else:
                found = tree, read_symbols(tree, path, project_root(path))
        _keep(self._by_digest, key, found)
        if fresh:
            self._checked.add(key)
            if self._log is not None and found is not None:
                for absent in found[1].absent:
                    self._log.setdefault(absent, None)
        return found

    @staticmethod
    def _appeared(found: tuple[ast.Module, ModuleSymbols] | None) -> bool:
        """Whether a module file that the imports of ``found`` looked for exists now."""
        return found is not None and any(p.is_file() for p in found[1].absent)

    def derived(self, path: Path, kind: Hashable, make: Callable[[Path, str], T]) -> T | None:
        """``make(path, text)`` for the module's current text, computed once per content digest
        and ``kind`` (what ``make`` computes); None when the module cannot be read."""
        read = self.text(path)
        digest = self.digest(path)
        if read is None or digest is None:
            return None
        key = (kind, path.absolute(), digest)
        value = self._derived.pop(key) if key in self._derived else make(path.absolute(), read)
        _keep(self._derived, key, value)
        return cast(T, value)  # stored by ``make`` under its own ``kind``

    def lookup(self, path: Path, dotted: str) -> Definition | ClassInfo | None:
        """What ``dotted`` (``f``, ``C``, ``C.m``, ``mod.f``, ``pkg.mod.C.m``) names in module
        ``path``; None when it is not defined in the project or cannot be told."""
        return self._lookup(path.absolute(), dotted.split("."), _MAX_HOPS)

    def method(self, cls: ClassInfo, name: str) -> Definition | None:
        """Method ``name`` of ``cls`` or of the first of its project bases that defines it
        (depth-first, left to right: the MRO of single and simple multiple inheritance)."""
        return self._method(cls, name, _MAX_HOPS, set())

    def _lookup(self, path: Path, parts: list[str], hops: int) -> Definition | ClassInfo | None:
        symbols = self.symbols(path)
        if symbols is None or hops <= 0 or not parts:
            return None
        head, rest = parts[0], parts[1:]
        if head in symbols.functions:
            return None if rest else symbols.functions[head]
        if head in symbols.classes:
            cls = symbols.classes[head]
            if not rest:
                return cls
            return self.method(cls, rest[0]) if len(rest) == 1 else None
        if head in symbols.imports:
            target = symbols.imports[head]
            inner = [*target.attribute.split("."), *rest] if target.attribute else rest
            return self._lookup(target.path, inner, hops - 1) if inner else None
        if head in symbols.unresolved:
            return None
        if path.name == "__init__.py":  # `pkg.mod.f` through a package that does not import mod
            submodule = module_file(path.parent, head)
            if submodule is not None and rest:
                return self._lookup(submodule.absolute(), rest, hops - 1)
        return None

    def _method(self, cls: ClassInfo, name: str, hops: int, seen: set[Definition]) -> Definition | None:
        if name in cls.methods:
            return cls.methods[name]
        seen.add(cls.definition)
        for base in cls.bases:
            found = self._lookup(cls.definition.path, base.split("."), hops - 1)
            if isinstance(found, ClassInfo) and found.definition not in seen:
                method = self._method(found, name, hops - 1, seen)
                if method is not None:
                    return method
        return None

    def base_names(self, cls: ClassInfo) -> list[str]:
        """The dotted names of every base outside the project that ``cls`` derives from, through
        its project bases (``transformers.Trainer`` for a subclass of a project subclass of it)."""
        names: list[str] = []
        self._outer_bases(cls, names, set(), _MAX_HOPS)
        return names

    def _outer_bases(self, cls: ClassInfo, names: list[str], seen: set[Definition], hops: int) -> None:
        seen.add(cls.definition)
        symbols = self.symbols(cls.definition.path)
        for base in cls.bases:
            found = self._lookup(cls.definition.path, base.split("."), hops - 1)
            if isinstance(found, ClassInfo):
                if found.definition not in seen and hops > 0:
                    self._outer_bases(found, names, seen, hops - 1)
            elif symbols is not None:
                names.append(_outer_name(base, symbols))


def _outer_name(base: str, symbols: ModuleSymbols) -> str:
    """A base as written, qualified through the module's import of its head when there is one."""
    head, _, rest = base.partition(".")
    qualified = symbols.external.get(head)
    if qualified is None:
        return base
    return f"{qualified}.{rest}" if rest else qualified
