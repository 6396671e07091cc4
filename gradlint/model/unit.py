"""A candidate unit (function or top-level statement) parsed with libcst, with positions.

Only the unit's own lines are parsed, so libcst and its position metadata cost in
proportion to the training code, not to the file. A nested unit is wrapped in ``if 1:`` so
its original indentation, and so every column, stays as in the file.
"""

from __future__ import annotations

import ast
import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import libcst as cst
from libcst.metadata import CodeRange

from gradlint.diagnostics import Span
from gradlint.model.partials import through_partial
from gradlint.model.positions import positions as positions_of
from gradlint.model.syntax import dotted
from gradlint.project.context import ForeignModule, ProjectContext, is_unit_of, training_unit
from gradlint.project.symbols import Definition
from gradlint.screen import ModuleFacts, Unit
from gradlint.source import parse_python

_HEADER = "if 1:\n"
_MAX_BOOLEAN_OPERATORS = 2000
"""libcst nests ``a and b and c`` one level per operator, and its native parser overflows the
C stack (the process dies, nothing to catch) at about 7,000 levels with an 8 MB stack; a
unit with more ``and``/``or`` operators than this is not parsed. Python's parser keeps such
chains flat, and no other construct nests deeper in libcst than in Python's own limits."""


@dataclass(eq=False)
class UnitModel:
    """A libcst view of one unit plus the module's facts."""

    unit: Unit
    module: cst.Module
    root: cst.CSTNode
    positions: Mapping[cst.CSTNode, CodeRange]
    line_offset: int
    facts: ModuleFacts
    assignments: dict[str, list[tuple[int, cst.CSTNode]]] = field(default_factory=dict)
    summary: object | None = None  # its :class:`gradlint.model.collect.Summary`, once walked
    all_assignments: dict[str, list[cst.BaseExpression]] | None = None
    """Every plain assignment by dotted target, once walked (:func:`gradlint.model.constructions.assignments_in`)."""
    home: Path | None = None  # the module file of a unit read from another module of the project
    column_shifts: dict[int, int] = field(default_factory=dict)
    """File line -> characters cut from its start for libcst (see :func:`parse_unit`)."""
    siblings: Callable[[str], list[UnitModel]] | None = None
    """The other methods of the unit's class in its module whose text holds a word, parsed on
    demand (``__init__`` building the scheduler a ``train`` method steps, found by the word
    ``scheduler``): :mod:`gradlint.model.constructions`."""

    def span(self, node: cst.CSTNode) -> Span:
        """The file span of ``node`` (1-based lines and columns, end exclusive)."""
        rng = self.positions[node]
        start, end = rng.start.line + self.line_offset, rng.end.line + self.line_offset
        shifts = self.column_shifts
        return Span(start, rng.start.column + 1 + shifts.get(start, 0), end, rng.end.column + 1 + shifts.get(end, 0))

    texts: dict[cst.CSTNode, str] = field(default_factory=dict)
    """Node -> its text, once generated (the tree never changes, and a model is kept across
    lints while its unit's text is unchanged: a re-lint generates no text again)."""

    def text_of(self, node: cst.CSTNode) -> str:
        """Source text of ``node`` as written."""
        found = self.texts.get(node)
        if found is None:
            found = self.texts[node] = self.module.code_for_node(node)
        return found

    def bound_values(self, name: str) -> list[cst.CSTNode]:
        """Values assigned to ``name`` in this unit."""
        return [value for _, value in self.assignments.get(name, [])]

    def single_value(self, name: str) -> cst.BaseExpression | None:
        """The expression of ``name``'s only assignment in this unit, if it has exactly one."""
        values = self.bound_values(name)
        return values[0] if len(values) == 1 and isinstance(values[0], cst.BaseExpression) else None


def parse_unit(lines: list[str], unit: Unit, facts: ModuleFacts) -> UnitModel:
    """Parse the unit's lines with libcst and resolve positions for them only.

    A form feed in a line's leading whitespace resets Python's indentation count; libcst's
    tokenizer does not, so the whitespace up to the last such form feed is cut for libcst
    and the cut is added back to that line's columns (the unit's text then differs from
    the file's, so fixes leave it alone: :attr:`gradlint.fixes.layout.Layout.sound`)."""
    own = lines[unit.start_line - 1 : unit.end_line]
    shifts: dict[int, int] = {}
    if any("\f" in line for line in own):
        for index, line in enumerate(own):
            cut = _form_feed_cut(line)
            if cut:
                shifts[unit.start_line + index] = cut
                own[index] = line[cut:]
        if unit.start_line in shifts:  # ast counts the form feed in the unit's column
            unit = dataclasses.replace(unit, indent=unit.indent - shifts[unit.start_line])
    body = "".join(own)
    if not body.endswith("\n"):
        body += "\n"
    nested = unit.indent > 0
    module, root, positions = _parse_segment(_HEADER + body if nested else body, nested)
    offset = unit.start_line - 1 - (1 if nested else 0)
    return UnitModel(unit=unit, module=module, root=root, positions=positions,
                     line_offset=offset, facts=facts, column_shifts=shifts)


_MODELS: dict[tuple[Path | None, Unit, str], UnitModel] = {}
_MAX_MODELS = 64
"""How many unit models are kept across lints, the most recently used last (a re-lint of an
edited file, in the language server, reuses those of its unchanged units)."""


def unit_model(lines: list[str], unit: Unit, facts: ModuleFacts, home: Path | None = None) -> UnitModel:
    """:func:`parse_unit`, or the model of an earlier lint of the same unit text at the same
    place, in the same module, with equal facts: with its summary and its assignments, so an
    unchanged unit is neither parsed nor walked again."""
    key = (home, unit, "".join(lines[unit.start_line - 1 : unit.end_line]))
    found = _MODELS.pop(key, None)
    if found is None or found.facts != facts:
        found = parse_unit(lines, unit, facts)
        found.home = home
    _MODELS[key] = found
    while len(_MODELS) > _MAX_MODELS:
        del _MODELS[next(iter(_MODELS))]
    return found


def _form_feed_cut(line: str) -> int:
    """How many leading characters of ``line`` end with its last form feed in the leading
    whitespace (0: none)."""
    lead = len(line) - len(line.lstrip(" \t\f"))
    return line.rfind("\f", 0, lead) + 1


@lru_cache(maxsize=64)
def _parse_segment(text: str, nested: bool) -> tuple[cst.Module, cst.CSTNode, Mapping[cst.CSTNode, CodeRange]]:
    """libcst tree and positions of one unit's text. Trees are immutable and positions are
    relative to the unit, so a re-lint (the language server on every edit) parses only the
    units whose text changed, wherever they moved in the file. Raises ParserSyntaxError, or
    RecursionError for a unit too deeply nested for libcst."""
    if _too_many_boolean_operators(text):
        raise RecursionError(f"more than {_MAX_BOOLEAN_OPERATORS} boolean operators: too deep for libcst")
    module = cst.parse_module(text)
    positions = positions_of(module)
    first = module.body[0]
    root = first.body.body[0] if nested and isinstance(first, cst.If) else first
    return module, root, positions


def _too_many_boolean_operators(text: str) -> bool:
    """Whether ``text`` holds more ``and``/``or`` operators than libcst can nest, counted on
    Python's syntax tree only when the words occur often enough (in any word) to matter."""
    if text.count("and") + text.count("or") <= _MAX_BOOLEAN_OPERATORS:
        return False
    try:
        tree = parse_python(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False  # libcst judges it
    return sum(len(node.values) - 1 for node in ast.walk(tree) if isinstance(node, ast.BoolOp)) > _MAX_BOOLEAN_OPERATORS


class UnitLibrary:
    """Parses a module's candidate units on demand, once each, and resolves calls to them and,
    through the project, to the training functions of other project modules."""

    def __init__(self, lines: list[str], units: list[Unit], facts: ModuleFacts,
                 project: ProjectContext | None = None, path: Path | None = None,
                 dispatch: Callable[..., Definition | None] | None = None) -> None:
        """``dispatch`` resolves a method call on a receiver of unknown class
        (:func:`gradlint.model.dispatch.dispatched`, which builds on this module's models)."""
        self._lines = lines
        self._dispatch = dispatch
        self._facts = facts
        self._project = project
        self._path = path.absolute() if path is not None else None
        self._parsed: dict[Unit, UnitModel] = {}
        self._by_name: dict[str, list[Unit]] = {}
        self._foreign: dict[tuple[Path, Unit], UnitModel | None] = {}
        self._resolved: dict[tuple[cst.Call, UnitModel], UnitModel | None] = {}
        for unit in units:
            self._by_name.setdefault(unit.name, []).append(unit)

    def get(self, unit: Unit) -> UnitModel:
        """The parsed model of ``unit`` (raises libcst's ParserSyntaxError)."""
        if unit not in self._parsed:
            facts = self._facts
            if self._project is not None and self._path is not None:
                facts = self._project.unit_facts(self._path, unit, facts)
            model = self._parsed[unit] = unit_model(self._lines, unit, facts)
            if unit.class_name is not None:  # a model kept from an earlier lint gets this lint's methods
                model.siblings = lambda word: self._methods_beside(unit, word)
        return self._parsed[unit]

    def _methods_beside(self, unit: Unit, word: str) -> list[UnitModel]:
        """The other methods of ``unit``'s class whose text holds ``word`` and that parse (a
        method without the word cannot name what it spells: only these are parsed)."""
        found = []
        for other in (u for units in self._facts.functions.values() for u in units):
            if other.class_name != unit.class_name or other == unit:
                continue
            if not any(word in line for line in self._lines[other.start_line - 1 : other.end_line]):
                continue
            try:
                found.append(self.get(other))
            except (cst.ParserSyntaxError, RecursionError):
                continue
        return found

    def resolve(self, call: cst.Call, caller: UnitModel) -> UnitModel | None:
        """The training function ``call`` reaches: ``train_step(...)`` (exactly one module-level
        function of that name) or ``self.train_step(...)`` (a method of the caller's class),
        else, through the project, a function, method or base-class method of a project module.
        Each call is resolved once per lint, however many loops reach it."""
        key = (call, caller)
        if key not in self._resolved:
            self._resolved[key] = self._resolve(call, caller)
        return self._resolved[key]

    def _resolve(self, call: cst.Call, caller: UnitModel) -> UnitModel | None:
        call = through_partial(call, caller)
        func = call.func
        if isinstance(func, cst.Name):
            name, method = func.value, False
        elif isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == "self":
            name, method = func.attr.value, True
        else:
            return self._reach(call, caller)
        if caller.home is not None:
            return self._reach(call, caller)
        fits = [u for u in self._by_name.get(name, []) if (u.class_name is not None) == method]
        if method:
            fits = [u for u in fits if u.class_name == caller.unit.class_name]
        else:  # a function defined in the caller is the one its name calls there (a local `closure`)
            fits = _defined_in(caller.unit, fits) or fits
        if len(fits) != 1:
            return self._reach(call, caller)
        try:
            return self.get(fits[0])
        except (cst.ParserSyntaxError, RecursionError):
            return None

    def _reach(self, call: cst.Call, caller: UnitModel) -> UnitModel | None:
        """A training function of the project that ``call`` reaches (any module, base classes)."""
        project = self._project
        name = dotted(call.func)
        origin = caller.home or self._path
        if project is None or name is None or origin is None:
            return None
        definition = project.reach(origin, name, caller.unit.class_name)
        head, _, method = name.partition(".")
        value = caller.single_value(head) if method and "." not in method else None
        if definition is None and isinstance(value, cst.Call):  # `cb = Callback(...)`, then `cb.on_batch_end()`
            constructor = dotted(value.func)
            definition = project.method_of(origin, constructor, method) if constructor else None
        if definition is None:
            definition = self._dispatch(call, caller, project, self.units_in, self.resolve) if self._dispatch else None
        if definition is None:
            return None
        if definition.path == self._path:  # a base class's method in this module
            own = [u for units in self._by_name.values() for u in units if is_unit_of(u, definition)]
            try:
                return self.get(own[0]) if len(own) == 1 else None
            except (cst.ParserSyntaxError, RecursionError):
                return None
        module = project.module(definition.path)
        unit = training_unit(module, definition) if module is not None else None
        if module is None or unit is None:
            return None
        key = (module.path, unit)
        if key not in self._foreign:
            self._foreign[key] = self._parse_foreign(module, unit)
        return self._foreign[key]

    def units_in(self, definition: Definition) -> list[UnitModel] | None:
        """The parsed candidate units written inside ``definition`` (it and the functions it
        defines); None when one does not parse."""
        project = self._project
        if definition.path == self._path:
            own = [u for units in self._by_name.values() for u in units]
            try:
                return [self.get(u) for u in own if _within(u, definition)]
            except (cst.ParserSyntaxError, RecursionError):
                return None
        module = project.module(definition.path) if project is not None else None
        if module is None:
            return []  # its text holds no training call
        found = []
        for unit in (u for u in module.screened.units if _within(u, definition)):
            key = (module.path, unit)
            if key not in self._foreign:
                self._foreign[key] = self._parse_foreign(module, unit)
            model = self._foreign[key]
            if model is None:
                return None
            found.append(model)
        return found

    def _parse_foreign(self, module: ForeignModule, unit: Unit) -> UnitModel | None:
        assert self._project is not None
        facts = self._project.unit_facts(module.path, unit, module.screened.facts)
        try:
            return unit_model(module.lines, unit, facts, module.path)
        except (cst.ParserSyntaxError, RecursionError):
            return None



def _within(unit: Unit, definition: Definition) -> bool:
    """Whether ``unit`` is written inside the lines of ``definition``."""
    return definition.line <= unit.start_line and unit.end_line <= definition.end_line


def _defined_in(caller: Unit, units: list[Unit]) -> list[Unit]:
    """Those of ``units`` written inside ``caller`` (functions it defines, at any depth)."""
    return [u for u in units if caller.start_line < u.start_line and u.end_line <= caller.end_line
            and u.indent > caller.indent]
