"""Project functions that build an LR schedule from a length they are handed.

``scheduler = build_scheduler(optimizer, len(loader) * epochs)``, with ``build_scheduler`` in
another module returning ``get_linear_schedule_with_warmup(optimizer, warmup, total)``: the
length GL106 traces is the caller's argument bound to ``total``. Only a function every
``return`` of which is a call of one known factory passing the parameter itself as the length
counts; anything it does to the parameter first (``total // accum``) makes it no factory here.
"""

from __future__ import annotations

import ast

from gradlint.names import dotted_name
from gradlint.project.kinds import KindReader
from gradlint.project.symbols import ClassInfo, Definition
from gradlint.schedule_lengths import length_specs
from gradlint.walks import walk

Spec = tuple[tuple[str, int | None], ...]


def schedule_factories(kinds: KindReader, definition: Definition, cls: ClassInfo | None,
                       node: ast.FunctionDef | ast.AsyncFunctionDef) -> dict[str, Spec]:
    """The calls ``node`` assigns (callee as written) to project functions that pass one of
    their parameters on as a known schedule's length, with where that parameter is taken."""
    found: dict[str, Spec] = {}
    for statement in walk(node):
        call = statement.value if isinstance(statement, (ast.Assign, ast.AnnAssign)) else None
        callee = dotted_name(call.func) if isinstance(call, ast.Call) else None
        if callee is None or callee in found or length_specs(callee):
            continue
        target = _target(kinds, definition, cls, callee)
        inner = kinds.node(target) if target is not None else None
        spec = _passed_on(inner, "." in target.qualname and callee.count(".") >= 1) if inner and target else ()
        if spec:
            found[callee] = spec
    return found


def _target(kinds: KindReader, definition: Definition, cls: ClassInfo | None, callee: str) -> Definition | None:
    head, _, rest = callee.partition(".")
    if head == "self":
        owner, _, method = rest.rpartition(".")
        held = kinds.held(cls, owner) if cls is not None and owner else cls
        return kinds.index.method(held, method) if held is not None and method else None
    found = kinds.index.lookup(definition.path, callee)
    return found if isinstance(found, Definition) else None


def _passed_on(node: ast.FunctionDef | ast.AsyncFunctionDef, bound_method: bool) -> Spec:
    """(keyword, index) of the parameters ``node`` hands to the one schedule factory it returns."""
    params = [a.arg for a in (*node.args.posonlyargs, *node.args.args)]
    if bound_method and params and params[0] in ("self", "cls"):
        params = params[1:]
    returns = [n.value for n in walk(node) if isinstance(n, ast.Return)]
    specs = set()
    for value in returns:
        if not isinstance(value, ast.Call) or any(isinstance(a, ast.Starred) for a in value.args):
            return ()
        spec = []
        for keyword, index in length_specs(dotted_name(value.func)):
            arg = next((k.value for k in value.keywords if k.arg == keyword), None)
            if arg is None and index is not None and index < len(value.args):
                arg = value.args[index]
            if isinstance(arg, ast.Name) and arg.id in params and not _rebound(node, arg.id):
                spec.append((arg.id, params.index(arg.id)))
        specs.add(tuple(spec))
    return specs.pop() if len(specs) == 1 else ()


def _rebound(node: ast.FunctionDef | ast.AsyncFunctionDef, name: str) -> bool:
    """Whether the function assigns its parameter ``name`` anew before passing it on."""
    return any(isinstance(n, ast.Name) and n.id == name and isinstance(n.ctx, ast.Store) for n in walk(node))
