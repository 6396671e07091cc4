"""Methods of a project class that count micro-batches and say when a window ends.

hanlp's ``History.step(gradient_accumulation)`` adds one to ``self.num_mini_batches`` and
returns ``self.num_mini_batches % gradient_accumulation == 0``: a loop that writes
``if history.step(N):`` gates its update on every N-th call, like ``if (i + 1) % N == 0:``.
Read with ``ast`` from the class's own methods; nothing is guessed from a method's name.
"""

from __future__ import annotations

import ast

from gradlint.project.kinds import KindReader, ObjectKinds
from gradlint.project.symbols import ClassInfo

WindowCounter = tuple[str, int]
"""The ``self`` attribute a method counts calls in, and the position (``self`` not counted)
of the parameter that is N."""


def window_counters(reader: KindReader, found: ObjectKinds, prefix: str) -> dict[str, WindowCounter]:
    """``{"history.step": ("num_mini_batches", 0)}`` for every name in ``found`` holding an
    instance of a project class with such a method (``prefix`` is put before each name)."""
    counters: dict[str, WindowCounter] = {}
    for name, cls in found.instances.items():
        if cls is None:
            continue
        for method, reading in _methods(reader, cls).items():
            counters[f"{prefix}{name}.{method}"] = reading
    return counters


def _methods(reader: KindReader, cls: ClassInfo) -> dict[str, WindowCounter]:
    found: dict[str, WindowCounter] = {}
    for name, definition in cls.methods.items():
        node = reader.node(definition)
        reading = window_counter(node) if node is not None else None
        if reading is not None:
            found[name] = reading
    return found


def window_counter(node: ast.FunctionDef | ast.AsyncFunctionDef) -> WindowCounter | None:
    """The reading of a method whose body is ``self.n += 1`` then ``return self.n % N == 0``
    (a docstring allowed), N one of its parameters; None for any other body."""
    params = [a.arg for a in (*node.args.posonlyargs, *node.args.args)][1:]
    body = [s for s in node.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    if len(body) != 2:
        return None
    step, ret = body
    counted = _self_attribute(step.target) if isinstance(step, ast.AugAssign) and isinstance(step.op, ast.Add) \
        and isinstance(step.value, ast.Constant) and step.value.value == 1 else None
    if counted is None or not isinstance(ret, ast.Return) or not isinstance(ret.value, ast.Compare):
        return None
    test = ret.value
    if len(test.ops) != 1 or not isinstance(test.ops[0], ast.Eq):
        return None
    sides = [test.left, test.comparators[0]]
    zero = [s for s in sides if isinstance(s, ast.Constant) and s.value == 0 and not isinstance(s.value, bool)]
    modulo = [s for s in sides if isinstance(s, ast.BinOp) and isinstance(s.op, ast.Mod)]
    if len(zero) != 1 or len(modulo) != 1:
        return None
    left, right = modulo[0].left, modulo[0].right
    if _self_attribute(left) != counted or not isinstance(right, ast.Name) or right.id not in params:
        return None
    return counted, params.index(right.id)


def _self_attribute(node: ast.expr) -> str | None:
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
        return node.attr
    return None
