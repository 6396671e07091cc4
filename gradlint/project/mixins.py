"""Methods a mixin calls on ``self`` that neither it nor its project bases define (or that they
only declare: a ``Protocol``'s ``def backward(self) -> None: ...``): the classes that mix it in
define them.

``class SGDUpdate(SGDStrategyProtocol): def training_epoch(self): ... self.backward() ...`` is
combined with ``BaseSGDTemplate`` in ``class SupervisedTemplate(SGDUpdate, ..., BaseSGDTemplate)``.
A call ``self.m()`` in such a mixin reaches the method ``m`` that the classes deriving from it
directly give it: each must have exactly one definition of ``m`` among itself and its other
project bases, the same one for all, else the call is left unresolved. A class counts as a mixin
only when it has no base outside the project but ``typing``'s (``Generic``, ``Protocol``) and
``abc.ABC``: a subclass of ``nn.Module`` or of a framework's trainer gets its methods from there.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from gradlint.project.index import ProjectIndex
from gradlint.project.kinds import KindReader
from gradlint.project.layout import project_root, python_files
from gradlint.project.symbols import ClassInfo, Definition

_NEUTRAL_BASES = frozenset({"typing.Generic", "typing.Protocol", "typing_extensions.Protocol", "abc.ABC", "object",
                            "Generic", "Protocol", "ABC"})
"""Bases outside the project that give a class no methods of its own to call."""

class MixinMethods:
    """The methods the classes mixing in a project class give its ``self`` calls, for one lint."""

    def __init__(self, index: ProjectIndex, kinds: KindReader) -> None:
        self.index = index
        self.kinds = kinds
        self._files: dict[Path, list[Path] | None] = {}
        self._subclasses: dict[Definition, list[ClassInfo]] = {}

    def method(self, mixin: ClassInfo, name: str) -> Definition | None:
        """The one definition of ``name`` that every class deriving directly from ``mixin``
        gives it, when ``mixin`` is a mixin that does not define ``name`` itself."""
        if not self._is_mixin(mixin) or any(
                self._concrete(c, name) for c in self.kinds.with_bases(mixin)):
            return None
        found: set[Definition] = set()
        for sub in self._direct_subclasses(mixin):
            definitions = {d for c in self.kinds.with_bases(sub) if c.definition != mixin.definition
                           for d in [self._concrete(c, name)] if d is not None}
            if len(definitions) != 1:
                return None
            found |= definitions
        return found.pop() if len(found) == 1 else None

    def declared_only(self, definition: Definition) -> bool:
        """Whether ``definition`` is a stub (``def backward(self) -> None: ...`` in a ``Protocol``)."""
        node = self.kinds.node(definition)
        return node is not None and _is_stub(node)

    def _is_mixin(self, cls: ClassInfo) -> bool:
        return all(base in _NEUTRAL_BASES for base in self.index.base_names(cls))

    def _concrete(self, cls: ClassInfo, name: str) -> Definition | None:
        """``cls``'s own definition of ``name``, unless it is only declared (a stub)."""
        definition = cls.methods.get(name)
        if definition is None:
            return None
        return None if self.kinds.node(definition) is None or self.declared_only(definition) else definition

    def _direct_subclasses(self, cls: ClassInfo) -> list[ClassInfo]:
        """The project classes that name ``cls`` among their bases."""
        key = cls.definition
        if key not in self._subclasses:
            self._subclasses[key] = self._search(cls)
        return self._subclasses[key]

    def _search(self, cls: ClassInfo) -> list[ClassInfo]:
        files = self._project_files(project_root(cls.definition.path))
        word = re.compile(rf"\b{re.escape(cls.definition.qualname)}\b")
        found: list[ClassInfo] = []
        for path in files or []:
            text = self.index.text(path)  # noted: an edit anywhere may add a class mixing it in
            if text is None or not word.search(text):
                continue
            symbols = self.index.symbols(path)
            for candidate in symbols.classes.values() if symbols is not None else ():
                if candidate.definition != cls.definition and any(
                        isinstance(base, ClassInfo) and base.definition == cls.definition
                        for base in (self.index.lookup(path, name) for name in candidate.bases)):
                    found.append(candidate)
        return found

    def _project_files(self, root: Path) -> list[Path] | None:
        """The Python files of the project under ``root`` (:func:`python_files`), noted in the
        index's log: a file that appears there may mix the class in."""
        if root not in self._files:
            self._files[root] = python_files(root)
        self.index.note_listing(root, self._files[root])
        return self._files[root]


def _is_stub(node: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """A body of a docstring, ``...``, ``pass`` or ``raise NotImplementedError``: a declaration."""
    for statement in node.body:
        if isinstance(statement, ast.Pass):
            continue
        if isinstance(statement, ast.Expr) and isinstance(statement.value, ast.Constant):
            continue  # a docstring or `...`
        if isinstance(statement, ast.Raise) and statement.exc is not None and "NotImplementedError" in ast.unparse(
                statement.exc):
            continue
        return False
    return True
