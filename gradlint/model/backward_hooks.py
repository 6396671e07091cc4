"""Optimizer steps registered to run inside backward, and whether the module accumulates.

PyTorch lets a hook step the optimizer as each gradient is ready (the "optimizer step in
backward" recipe: ``p.register_post_accumulate_grad_hook(hook)`` with ``hook`` stepping and
zeroing a per-parameter optimizer), which saves the memory of the gradients. That is correct
for one backward per update; with accumulation the hook steps on every backward. This module
finds, in the module's ``ast``, the registrations whose hook (a function of the module, a
method, a lambda or a ``functools.partial`` of one) steps or zeroes an optimizer
unconditionally, and the module's own evidence that it accumulates.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass

from gradlint.names import Kind, dotted_name, kind_by_name
from gradlint.walks import walk

HOOK_REGISTRATIONS = frozenset({
    "register_post_accumulate_grad_hook", "register_hook", "register_full_backward_hook",
    "register_backward_hook", "register_full_backward_pre_hook",
})
IN_BACKWARD = frozenset({"_apply_optimizer_in_backward"})  # torch.distributed.optim
_STEPPING = frozenset({"step", "zero_grad"})
_FACTOR = re.compile(r"accum|accumulat", re.I)


@dataclass(frozen=True)
class HookStep:
    """A registration (or ``_apply_optimizer_in_backward`` call) and what its hook does."""

    call: ast.Call
    hook: str  # the hook as written (``optimizer_hook``, ``self._step_hook``, ``<lambda>``)
    action: str  # ``optimizer_dict[p].step()``, as written


def hook_steps(tree: ast.Module) -> Iterator[HookStep]:
    """Every hook registration of the module whose hook steps or zeroes an optimizer outside
    any ``if`` (a hook that tests a window counter first may own the boundary itself)."""
    functions = _functions(tree)
    for node in walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = dotted_name(node.func) or ""
        last = name.rsplit(".", 1)[-1]
        if last in IN_BACKWARD:
            yield HookStep(node, last, f"{last}(...)")
        elif last in HOOK_REGISTRATIONS and isinstance(node.func, ast.Attribute) and node.args:
            hook = node.args[0]
            for body, label in _hook_bodies(hook, functions):
                action = _unconditional_step(body)
                if action is not None:
                    yield HookStep(node, label, action)
                    break


def scope_of(tree: ast.Module, call: ast.Call) -> ast.AST:
    """The top-level function or class holding ``call`` (the module for top-level code): the
    code that trains with the hook it registers."""
    for statement in tree.body:
        if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and (
                statement.lineno <= call.lineno <= (statement.end_lineno or statement.lineno)):
            return statement
    return tree


def accumulates(scope: ast.AST) -> bool:
    """``scope`` divides a loss by an accumulation factor (``loss / accum_steps``,
    ``loss /= grad_accum``), gates on one (``% accumulation_steps``), loops over one
    (``for _ in range(accum_steps)``), or hands one to a framework
    (``Accelerator(gradient_accumulation_steps=N)``, N not a literal 1): names the code gives
    its window size N."""
    for node in _own_nodes(scope):
        if isinstance(node, ast.keyword) and node.arg is not None and _FACTOR.search(node.arg) and not (
                isinstance(node.value, ast.Constant) and node.value.value in (0, 1, False, None)):
            return True
        if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Div, ast.Mod)) and _names_factor(node.right):
            return True
        if isinstance(node, ast.AugAssign) and isinstance(node.op, ast.Div) and _names_factor(node.value):
            return True
        if (isinstance(node, ast.For) and isinstance(node.iter, ast.Call) and dotted_name(node.iter.func) == "range"
                and len(node.iter.args) == 1 and _names_factor(node.iter.args[0])):
            return True
    return False


def _own_nodes(scope: ast.AST) -> Iterator[ast.AST]:
    """The nodes of ``scope``; for the module, those outside its functions and classes."""
    if not isinstance(scope, ast.Module):
        yield from walk(scope)
        return
    for statement in scope.body:
        if not isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            yield from ast.walk(statement)


def _names_factor(node: ast.expr) -> bool:
    name = dotted_name(node)
    return name is not None and bool(_FACTOR.search(name.rsplit(".", 1)[-1]))


def _functions(tree: ast.Module) -> dict[str, list[ast.FunctionDef | ast.AsyncFunctionDef]]:
    """Every function and method of the module by name (nested ones included)."""
    found: dict[str, list[ast.FunctionDef | ast.AsyncFunctionDef]] = {}
    for node in walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            found.setdefault(node.name, []).append(node)
    return found


def _hook_bodies(hook: ast.expr, functions: dict[str, list[ast.FunctionDef | ast.AsyncFunctionDef]]
                 ) -> list[tuple[list[ast.stmt], str]]:
    """The statements a hook runs: a lambda's body, or the body of the one function the name
    (``hook``, ``self.hook``, ``partial(hook, ...)``) can mean."""
    if isinstance(hook, ast.Lambda):
        return [([ast.Expr(hook.body)], "<lambda>")]
    if isinstance(hook, ast.Call) and (dotted_name(hook.func) or "").rsplit(".", 1)[-1] == "partial" and hook.args:
        return _hook_bodies(hook.args[0], functions)
    name = dotted_name(hook)
    if name is None or name.count(".") > 1 or ("." in name and not name.startswith("self.")):
        return []
    defs = functions.get(name.rsplit(".", 1)[-1], [])
    return [(defs[0].body, name)] if len(defs) == 1 else []


def _unconditional_step(body: list[ast.stmt]) -> str | None:
    """``opt.step()`` / ``opt.zero_grad()`` on an optimizer, run by ``body`` whatever its tests
    (a statement of the body, of a ``for`` / ``with`` in it, or a lambda's expression)."""
    for statement in body:
        if isinstance(statement, (ast.If, ast.While, ast.Try, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            continue
        if isinstance(statement, (ast.For, ast.AsyncFor, ast.With, ast.AsyncWith)):
            inner = _unconditional_step(statement.body)
            if inner is not None:
                return inner
            continue
        nodes = list(ast.walk(statement))
        if any(isinstance(node, (ast.IfExp, ast.BoolOp)) for node in nodes):
            continue  # `opt.step() if ready else None`, `ready and opt.step()`: conditional
        for node in nodes:
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in _STEPPING
                    and _is_optimizer(node.func.value)):
                return f"{ast.unparse(node.func.value)}.{node.func.attr}()"
    return None


def _is_optimizer(receiver: ast.expr) -> bool:
    """An optimizer by its name: ``optimizer``, ``self.opt``, ``optimizer_dict[p]``."""
    while isinstance(receiver, ast.Subscript):
        receiver = receiver.value
    name = dotted_name(receiver)
    return name is not None and kind_by_name(name) is Kind.OPTIMIZER
