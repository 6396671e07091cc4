"""What the checkpoints and resumes around a training loop store and restore, read with ``ast``.

A checkpoint is a ``torch.save`` / ``accelerator.save`` of an object the code builds: a dict
literal, or a name assigned dict literals and filled entry by entry (``ckpt = {}``,
``ckpt["optimizer"] = opt.state_dict()``, ``ckpt.update(...)``); a helper of the module or of the
project that saves one of its parameters (``save_checkpoint(state, path)``) or builds the dict
from its parameters makes the call that passes them a checkpoint too. Its *content* is the text
of everything stored, with the local names it reads expanded to their values, so a reader can
ask whether ``optimizer.state_dict`` or ``scheduler`` occurs in it. What cannot be told (a
``**`` entry, a dict returned by another call, a parameter) is no checkpoint: nothing is said.

The scopes read for a loop are its own function and, for a method, the other methods of its
class in the module (``save`` / ``load`` methods), where only ``self`` attributes name the same
objects as the loop's.
"""

from __future__ import annotations

import ast
import re
import weakref
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from gradlint.names import dotted_name
from gradlint.project.context import ProjectContext
from gradlint.project.symbols import Definition
from gradlint.source import python_lines

_SAVERS = frozenset({"torch.save"})
_ACCELERATOR_SAVE = re.compile(r"(^|\.)accelerator\.save$")
_OPTIMIZER_STATE = re.compile(r"optim\w*state_dict$", re.IGNORECASE)
"""Functions that return an optimizer's state (``FSDP.full_optim_state_dict(model, optimizer)``,
``get_optimizer_state_dict(model, optimizer)``)."""
_DEPTH = 4
"""How many local names deep a checkpoint's content is expanded."""

Function = ast.FunctionDef | ast.AsyncFunctionDef


@dataclass(frozen=True)
class Site:
    """A save written in another project module: that module, its saver call and its lines."""

    path: Path
    call: ast.Call
    lines: list[str]


@dataclass(frozen=True)
class Stored:
    """What a checkpoint stores: the text of its content, the dict literal written in the call
    (if any), and whether the dict was handed to a call that returns it with entries of its own
    (``state = self.upstream.add_state_to_save(state)``): such a call may add ``self``
    attributes, never a local object it is not passed."""

    content: str
    literal: ast.Dict | None
    extended: bool = False
    site: Site | None = None  # written by a helper of another module, at this save


@dataclass(frozen=True)
class Checkpoint:
    """A checkpoint write: the call that makes it (the saver's, or the helper call that passes
    the state) and what it stores."""

    call: ast.Call
    stored: Stored

    @property
    def content(self) -> str:
        return self.stored.content

    @property
    def literal(self) -> ast.Dict | None:
        return self.stored.literal


@dataclass(frozen=True)
class Scope:
    """A function whose checkpoints are read; ``own`` is the loop's own function (where every
    name is the loop's), else a sibling method (where only ``self`` attributes are)."""

    node: Function | ast.Module
    own: bool


def scopes_of(tree: ast.Module, name: str, class_name: str | None, start: int, end: int) -> list[Scope]:
    """The loop's function (``name`` between lines ``start`` and ``end``; the module itself for
    top-level code) and, in class ``class_name``, the class's other methods."""
    if class_name is None:
        own = next((n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                    and n.name == name and start <= n.lineno <= end), None)
        return [Scope(own if own is not None else tree, True)]
    cls = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == class_name), None)
    if cls is None:
        return []
    methods = [n for n in cls.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))]
    return [Scope(m, m.name == name and start <= m.lineno <= end) for m in methods]


_OWN_NODES: weakref.WeakKeyDictionary[ast.AST, tuple[ast.AST, ...]] = weakref.WeakKeyDictionary()
_VALUES: weakref.WeakKeyDictionary[ast.AST, _Values] = weakref.WeakKeyDictionary()


def own_nodes(scope: Function | ast.Module) -> tuple[ast.AST, ...]:
    """Every node of the function's (or module's top-level) code, nested functions, lambdas and
    classes left out, in source order; listed once per scope (the rule reads each method of a
    class for every loop of the class, five ways)."""
    found = _OWN_NODES.get(scope)
    if found is None:
        found = _OWN_NODES[scope] = tuple(_own_nodes(scope))
    return found


def _own_nodes(scope: Function | ast.Module) -> Iterator[ast.AST]:
    stack: list[ast.AST] = list(reversed(scope.body))
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
            continue
        yield node
        stack.extend(reversed(list(ast.iter_child_nodes(node))))


def _values_of(scope: Function | ast.Module) -> _Values:
    """:class:`_Values` of ``scope``, read once per scope (callers only read it)."""
    found = _VALUES.get(scope)
    if found is None:
        found = _VALUES[scope] = _Values(scope)
    return found


class _Values:
    """The values a function assigns to each plain name (None: assigned some other way), and the
    entries it adds to names (``d[k] = v``, ``d.update(...)``)."""

    def __init__(self, scope: Function | ast.Module) -> None:
        self.values: dict[str, list[ast.expr | None]] = {}
        self.entries: dict[str, list[ast.expr | None]] = {}
        for node in own_nodes(scope):
            if isinstance(node, ast.Assign):
                for target in node.targets:
                    self._bind(target, node.value)
            elif isinstance(node, (ast.AnnAssign, ast.AugAssign)) and isinstance(node.target, ast.Name):
                self.values.setdefault(node.target.id, []).append(
                    node.value if isinstance(node, ast.AnnAssign) else None)
            elif isinstance(node, (ast.For, ast.AsyncFor, ast.With, ast.AsyncWith, ast.NamedExpr)):
                for target in _targets(node):
                    for name in _names(target):
                        self.values.setdefault(name, []).append(None)
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "update" \
                    and isinstance(node.func.value, ast.Name):
                arg = node.args[0] if len(node.args) == 1 and not node.keywords else None
                self.entries.setdefault(node.func.value.id, []).append(arg if isinstance(arg, ast.Dict) else None)

    def _bind(self, target: ast.expr, value: ast.expr) -> None:
        if isinstance(target, ast.Name):
            self.values.setdefault(target.id, []).append(value)
        elif isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name):
            self.entries.setdefault(target.value.id, []).append(value)
        else:
            for name in _names(target):
                self.values.setdefault(name, []).append(None)

    def stored(self, expr: ast.expr) -> Stored | None:
        """What the dict ``expr`` evaluates to holds, or None when it is not a dict the function
        builds. A name assigned a dict first may be re-assigned calls that are passed it
        (``state = extend(state)``): the dict extended."""
        if isinstance(expr, ast.Dict):
            return Stored(self.expand(ast.unparse(expr)), expr) if None not in expr.keys else None
        if not isinstance(expr, ast.Name):
            return None
        values = self.values.get(expr.id, [])
        entries = self.entries.get(expr.id, [])
        extended = [v for v in values[1:] if _extends(v, expr.id)]
        if not values or not all(_dict_value(v) for v in values if v not in extended) or None in entries:
            return None
        parts = [ast.unparse(v) for v in values if v is not None] + [ast.unparse(e) for e in entries if e is not None]
        sole = values[0] if len(values) == 1 and not entries and isinstance(values[0], ast.Dict) else None
        return Stored(self.expand(" ; ".join(parts)), sole, bool(extended))

    def expand(self, text: str) -> str:
        """``text`` followed by the values of the local names it reads, recursively."""
        seen: set[str] = set()
        pending = [text]
        parts: list[str] = []
        for _ in range(_DEPTH):
            found: list[str] = []
            for piece in pending:
                parts.append(piece)
                for name in set(re.findall(r"(?<![\w.])[A-Za-z_]\w*", piece)) - seen:
                    seen.add(name)
                    found.extend(ast.unparse(v) for v in self.values.get(name, []) if v is not None)
            pending = found
        parts.extend(pending)
        return " ; ".join(parts)


def _extends(value: ast.expr | None, name: str) -> bool:
    """``f(..., name, ...)``: a call passed the dict ``name`` (whose result is assigned to it)."""
    return isinstance(value, ast.Call) and any(isinstance(a, ast.Name) and a.id == name for a in value.args)


def _dict_value(value: ast.expr | None) -> bool:
    """``{...}`` with no ``**`` entry, or ``dict(...)`` with keywords only."""
    if isinstance(value, ast.Dict):
        return None not in value.keys
    return isinstance(value, ast.Call) and dotted_name(value.func) == "dict" and not value.args \
        and all(k.arg is not None for k in value.keywords)


def _targets(node: ast.AST) -> list[ast.expr]:
    if isinstance(node, (ast.For, ast.AsyncFor)):
        return [node.target]
    if isinstance(node, ast.NamedExpr):
        return [node.target]
    if isinstance(node, (ast.With, ast.AsyncWith)):
        return [item.optional_vars for item in node.items if item.optional_vars is not None]
    return []


def _names(target: ast.expr) -> list[str]:
    return [n.id for n in ast.walk(target) if isinstance(n, ast.Name)]


def _saved(call: ast.Call, aliases: dict[str, str]) -> ast.expr | None:
    """The object a saver call stores (its first argument, or ``obj=``), None for other calls."""
    name = dotted_name(call.func)
    if name is None:
        return None
    head, _, rest = name.partition(".")
    qualified = f"{aliases.get(head, head)}.{rest}" if rest else aliases.get(head, head)
    if qualified not in _SAVERS and not _ACCELERATOR_SAVE.search(name):
        return None
    if call.args:
        return call.args[0] if not isinstance(call.args[0], ast.Starred) else None
    return next((k.value for k in call.keywords if k.arg == "obj"), None)


_ALIASES: weakref.WeakKeyDictionary[ast.Module, dict[str, str]] = weakref.WeakKeyDictionary()
_HOLDS_STATEMENTS = (ast.stmt, ast.excepthandler, ast.match_case)


def aliases_of(tree: ast.Module) -> dict[str, str]:
    """Local name -> qualified name, from the module's imports (``th`` -> ``torch``); read once
    per tree (the caller does not change it)."""
    found = _ALIASES.get(tree)
    if found is None:
        found = _ALIASES[tree] = _import_aliases(tree)
    return found


def _import_aliases(tree: ast.Module) -> dict[str, str]:
    """:func:`aliases_of`, imports read in ``ast.walk``'s order (a later one wins). Imports are
    statements, so only the statements and the clauses holding them are walked: leaving out
    the expressions keeps the order of the nodes that remain (breadth first)."""
    found: dict[str, str] = {}
    pending: deque[ast.AST] = deque([tree])
    while pending:
        node = pending.popleft()
        pending.extend(child for child in ast.iter_child_nodes(node) if isinstance(child, _HOLDS_STATEMENTS))
        if isinstance(node, ast.Import):
            for alias in node.names:
                found[alias.asname or alias.name.split(".")[0]] = alias.name if alias.asname else alias.name.split(".")[0]
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                found[alias.asname or alias.name] = f"{node.module}.{alias.name}"
    return found


def checkpoints(scope: Function | ast.Module, aliases: dict[str, str], helpers: HelperSaves) -> list[Checkpoint]:
    """The checkpoints ``scope`` writes: saver calls of a dict it builds, and calls of helpers
    that save what they are passed (or a dict they build from it)."""
    values = _values_of(scope)
    found: list[Checkpoint] = []
    for node in own_nodes(scope):
        if not isinstance(node, ast.Call):
            continue
        saved = _saved(node, aliases)
        if saved is not None:
            stored = values.stored(saved)
            if stored is not None:
                found.append(Checkpoint(node, stored))
            continue
        found.extend(Checkpoint(node, stored) for stored in helpers.through(node, values))
    return found


class HelperSaves:
    """Functions of the module or the project that write a checkpoint for their caller: one
    that saves a parameter (the caller's argument is the checkpoint), or that saves a dict it
    builds (its content, with each parameter read as the caller's argument)."""

    def __init__(self, tree: ast.Module, aliases: dict[str, str], project: ProjectContext | None,
                 class_name: str | None) -> None:
        self.functions = {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
        self.aliases = aliases
        self.project = project
        self.class_name = class_name

    def through(self, call: ast.Call, values: _Values) -> list[Stored]:
        """What ``call`` saves through a helper, per save."""
        reached = self._helper(call)
        if reached is None:
            return []
        helper, helper_aliases, home = reached
        if helper.args.vararg is not None or helper.args.kwarg is not None:
            return []
        arguments = _bind_arguments(helper, call)
        if arguments is None:
            return []
        inner = _values_of(helper)
        found: list[Stored] = []
        for node in own_nodes(helper):
            if not isinstance(node, ast.Call):
                continue
            saved = _saved(node, helper_aliases)
            if saved is None:
                continue
            if isinstance(saved, ast.Name) and saved.id in arguments and saved.id not in inner.values:
                stored = values.stored(arguments[saved.id])
                if stored is not None:
                    found.append(stored)
                continue
            own = inner.stored(saved) or _optimizer_state(saved, inner)
            if own is None:
                continue
            content = own.content
            for param, argument in arguments.items():
                content = re.sub(rf"(?<![\w.]){re.escape(param)}(?!\w)", ast.unparse(argument), content)
            site = Site(home[0], node, home[1]) if home is not None else None
            found.append(Stored(values.expand(content), None, own.extended, site))
        return found

    def _helper(self, call: ast.Call) -> tuple[Function, dict[str, str], tuple[Path, list[str]] | None] | None:
        """The function ``call`` reaches, with its module's import aliases and, for another
        module, that module's path and lines: a function of the module, or through the project
        one of another module (a method of the loop's own class is read as a sibling scope)."""
        name = dotted_name(call.func)
        if name is None or name.startswith("self."):
            return None
        if name in self.functions:
            return self.functions[name], self.aliases, None
        if self.project is None:
            return None
        found = self.project.reach(self.project.path, name, self.class_name)
        if not isinstance(found, Definition) or "." in found.qualname:
            return None
        node = self.project.kinds.node(found)
        tree = self.project.index.tree(found.path)
        text = self.project.index.text(found.path)
        if node is None or tree is None or text is None:
            return None
        return node, aliases_of(tree), (found.path, python_lines(text))


def _optimizer_state(saved: ast.expr, values: _Values) -> Stored | None:
    """An optimizer's state saved alone: a call of a function that returns it
    (``FSDP.full_optim_state_dict(model, optimizer)``), written in the save or assigned once to
    the name it saves."""
    if isinstance(saved, ast.Name) and len(values.values.get(saved.id, [])) == 1 \
            and not values.entries.get(saved.id):
        saved = values.values[saved.id][0] or saved
    if isinstance(saved, ast.Call) and _OPTIMIZER_STATE.search(dotted_name(saved.func) or ""):
        return Stored(ast.unparse(saved), None)
    return None


def optimizer_state(content: str, optimizer: str) -> bool:
    """Whether ``content`` holds ``optimizer``'s state: ``optimizer.state_dict()``, or a call
    of a function that returns it with ``optimizer`` as an argument."""
    name = re.escape(optimizer)
    return re.search(rf"(?<![\w.]){name}\.state_dict(?!\w)", content) is not None or re.search(
        rf"optim\w*state_dict\((?:[^()]*,\s*)?{name}\s*[,)]", content, re.IGNORECASE) is not None


def _bind_arguments(helper: Function, call: ast.Call) -> dict[str, ast.expr] | None:
    """Parameter name -> the caller's argument expression; None when the call cannot be matched
    (a ``*`` / ``**`` argument)."""
    params = [a.arg for a in (*helper.args.posonlyargs, *helper.args.args)]
    if any(isinstance(a, ast.Starred) for a in call.args) or any(k.arg is None for k in call.keywords):
        return None
    if len(call.args) > len(params):
        return None
    bound = dict(zip(params, call.args, strict=False))
    keywords = {a.arg for a in (*helper.args.args, *helper.args.kwonlyargs)}
    for keyword in call.keywords:
        if keyword.arg in keywords:
            bound[keyword.arg] = keyword.value
    return bound


def restores(scope: Function | ast.Module) -> list[tuple[ast.Call, str]]:
    """``X.load_state_dict(...)`` calls of the scope, with ``X`` as written."""
    found: list[tuple[ast.Call, str]] = []
    for node in own_nodes(scope):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "load_state_dict":
            receiver = dotted_name(node.func.value)
            if receiver:
                found.append((node, receiver))
    return found


def state_dict_reads(scope: Function | ast.Module) -> set[str]:
    """Objects the scope may save apart: receivers of ``X.state_dict()`` calls, and objects
    handed to a call named for saving (``save_scheduler(scheduler, path)``)."""
    found: set[str] = set()
    for node in own_nodes(scope):
        if not isinstance(node, ast.Call):
            continue
        callee = dotted_name(node.func) or ""
        if isinstance(node.func, ast.Attribute) and node.func.attr == "state_dict":
            found.add(dotted_name(node.func.value) or "")
        elif any(word in callee.rsplit(".", 1)[-1].lower() for word in ("save", "checkpoint")):
            found |= {name for arg in (*node.args, *(k.value for k in node.keywords)) if (name := dotted_name(arg))}
    return found - {""}


def dict_values(scope: Function | ast.Module) -> set[str]:
    """Names the scope stores as a value of a dict it builds (``{"global_step": self.global_step}``,
    ``state["step"] = step``): a state a method such as ``_get_state_dict()`` returns for a save."""
    found: set[str] = set()
    for node in own_nodes(scope):
        if isinstance(node, ast.Dict):
            found |= {name for value in node.values if (name := dotted_name(value))}
        elif isinstance(node, ast.Assign) and any(isinstance(t, ast.Subscript) for t in node.targets):
            found |= {name for name in [dotted_name(node.value)] if name}
    return found


def aliases_in(scope: Function | ast.Module) -> dict[str, str]:
    """Local names that may hold one ``self`` attribute: every ``self`` attribute the name is
    assigned is the same one (``optimizer = self.optimizer``, possibly beside other values in
    other branches, such as an optimizer built for a subset of the variables)."""
    values = _values_of(scope).values
    found: dict[str, str] = {}
    for name, assigned in values.items():
        attributes = {text for value in assigned if isinstance(value, ast.Attribute)
                      and (text := dotted_name(value)) and text.startswith("self.") and text.count(".") == 1}
        if len(attributes) == 1:
            found[name] = attributes.pop()
    return found
