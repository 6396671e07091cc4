"""Training losses divided by a count of valid targets that may be zero.

A token loss is often normalised by how many targets count: ``(labels != ignore_index).sum()``,
``mask.sum()``, ``attention_mask.sum()``, or the HF Trainer's ``num_items_in_batch``. A
micro-batch (or window) with no valid target makes that count 0, the loss ``0 / 0 = NaN``, and
every gradient NaN. This module finds such divisions in the module's ``ast``, in training code
only (a function that runs backward, or a ``compute_loss`` / ``training_step`` hook; never
evaluation code), when nothing guards the count against zero.
"""

from __future__ import annotations

import ast
import re
import unicodedata
from dataclasses import dataclass

from gradlint.project.symbols import statements
from gradlint.walks import walk

COUNT_NAME = "num_items_in_batch"
_MASK_WORDS = ("mask",)
_EVAL_WORDS = ("eval", "valid", "test", "metric", "predict", "infer", "score", "accuracy")
_HOOKS = frozenset({"compute_loss", "training_step", "train_step", "forward_backward"})


@dataclass(frozen=True)
class UnguardedDivision:
    """A division of a loss by a valid count with no zero guard."""

    division: ast.BinOp | ast.AugAssign
    divisor: ast.expr
    count: str  # the count as written, for messages
    tensor: bool  # the count is a tensor (a ``.sum()``), so ``.clamp(min=1)`` applies


def unguarded_divisions(tree: ast.Module, lines: list[str] | None = None) -> list[UnguardedDivision]:
    """Every unguarded division of a training loss by a valid-target count in ``tree``
    (``lines``: the module's lines, when the caller has them, to skip functions whose text
    cannot run backward without walking them)."""
    found: list[UnguardedDivision] = []
    for func in statements(tree.body):  # functions are statements: expressions are not walked
        if isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)) and _training(func, lines):
            found.extend(_in_function(func))
    return found


def divisions_in(func: ast.FunctionDef | ast.AsyncFunctionDef) -> list[UnguardedDivision]:
    """The unguarded divisions of a function known to compute a training loss (one a Trainer is
    given as ``compute_loss_func``, or a helper it calls), whatever its name."""
    return _in_function(func)


def training_function(func: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Whether :func:`unguarded_divisions` reads ``func`` (it is training code)."""
    return _training(func, None)


def _training(func: ast.FunctionDef | ast.AsyncFunctionDef, lines: list[str] | None) -> bool:
    """A loss hook (``compute_loss``, ``training_step``) or a function that runs backward.
    A loss helper is not enough: a library loss with ``reduction="mean"`` has the same 0 / 0
    as torch's own, and the caller chose it."""
    name = func.name.lower()
    if any(word in name for word in _EVAL_WORDS):
        return False
    if func.name in _HOOKS:
        return True
    if lines is not None and not _may_say_backward(func, lines):
        return False
    return any(isinstance(n, ast.Attribute) and n.attr in ("backward", "manual_backward") for n in walk(func))


def _may_say_backward(func: ast.FunctionDef | ast.AsyncFunctionDef, lines: list[str]) -> bool:
    """Whether the function's lines (decorators included) can hold a ``.backward`` attribute:
    its text spells ``backward``, as written or as Python's parser normalises identifiers (NFKC)."""
    start = min([func.lineno, *(d.lineno for d in func.decorator_list)])
    text = "".join(lines[start - 1 : func.end_lineno or len(lines)])
    return "backward" in text or (not text.isascii() and "backward" in unicodedata.normalize("NFKC", text))


def _in_function(func: ast.FunctionDef | ast.AsyncFunctionDef) -> list[UnguardedDivision]:
    masks = _mask_names(func)
    counts = _count_names(func, masks)
    params = {a.arg for a in (*func.args.posonlyargs, *func.args.args, *func.args.kwonlyargs)}
    if COUNT_NAME in params and all(_mask_sum(v, masks) for v in _single_values(func).get(COUNT_NAME, [])):
        counts[COUNT_NAME] = False  # the HF Trainer's count (or this micro-batch's when it passes None)
    guarded = _guarded_names(func)
    no_grad = {id(n) for w in walk(func) if isinstance(w, (ast.With, ast.AsyncWith)) and _no_grad(w)
               for n in ast.walk(w)}
    conditional = {id(n) for e in walk(func) if isinstance(e, ast.IfExp) for n in ast.walk(e)}
    found: list[UnguardedDivision] = []
    for node in walk(func):
        if id(node) in no_grad or id(node) in conditional:
            continue
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div):
            divisor, numerator, target = node.right, node.left, _target_of(func, node)
        elif isinstance(node, ast.AugAssign) and isinstance(node.op, ast.Div):
            divisor, numerator, target = node.value, node.target, ast.unparse(node.target)
        else:
            continue
        count = _count(divisor, counts, masks)
        if count is None or _names(divisor) & guarded:
            continue
        if _count(numerator, counts, masks) is not None:
            continue  # a count over a count: a ratio (a micro-batch's share of the window), not a loss
        if not _loss_like(ast.unparse(numerator)) and not _loss_like(target or ""):
            continue
        tensor = isinstance(divisor, ast.Call) or counts.get(_name(divisor) or "", False)
        found.append(UnguardedDivision(node, divisor, ast.unparse(divisor), tensor))
    return found


def _count(divisor: ast.expr, counts: dict[str, bool], masks: set[str]) -> str | None:
    """The divisor as written when it is a valid count: a ``.sum()`` of a mask or of a
    ``!=`` comparison, or a name in ``counts`` (assigned one of those, or the hook's
    ``num_items_in_batch`` parameter)."""
    name = _name(divisor)
    if name is not None:
        return name if name in counts else None
    return ast.unparse(divisor) if _mask_sum(divisor, masks) else None


def _mask_sum(node: ast.expr, masks: set[str]) -> bool:
    """``mask.sum()``, ``attention_mask.sum()``, ``(labels != -100).sum()``, ``valid.sum()`` for
    a name in ``masks`` (``.float()`` / ``.long()`` / ``.item()`` around it allowed)."""
    while isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in (
            "float", "long", "int", "item", "detach", "to", "type_as"):
        node = node.func.value
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "sum"):
        return False
    base = node.func.value
    while isinstance(base, ast.Call) and isinstance(base.func, ast.Attribute) and base.func.attr in (
            "float", "long", "int", "bool", "view", "reshape", "flatten"):
        base = base.func.value
    if isinstance(base, ast.Compare):
        return len(base.ops) == 1 and isinstance(base.ops[0], ast.NotEq)
    last = _name(base)
    return last is not None and (last in masks or any(word in last.rsplit(".", 1)[-1].lower() for word in _MASK_WORDS))


def _single_values(func: ast.AST) -> dict[str, list[ast.expr]]:
    """The values assigned to each plain name in ``func``."""
    values: dict[str, list[ast.expr]] = {}
    for node in walk(func):
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            values.setdefault(node.targets[0].id, []).append(node.value)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)) and isinstance(node.target, ast.Name):
            values.setdefault(node.target.id, []).append(node.value or node.target)
    return values


def _mask_names(func: ast.AST) -> set[str]:
    """Names assigned a ``!=`` comparison exactly once (``valid = labels != -100``)."""
    return {name for name, found in _single_values(func).items() if len(found) == 1
            and isinstance(found[0], ast.Compare) and len(found[0].ops) == 1 and isinstance(found[0].ops[0], ast.NotEq)}


def _count_names(func: ast.AST, masks: set[str]) -> dict[str, bool]:
    """Names assigned a valid count exactly once in ``func`` (value: it is a tensor)."""
    return {name: True for name, found in _single_values(func).items() if len(found) == 1 and _mask_sum(found[0], masks)}


def _guarded_names(func: ast.AST) -> set[str]:
    """Names a zero guard reads: a part of an ``if`` / ``assert`` / ``while`` test (not an ``is
    None`` test, alone or and-ed with others: a missing count is not a zero one), a ``max(...)``, ``clamp``, ``where`` or
    ``clip`` call, or a reassignment (``n = max(n, 1)``)."""
    guarded: set[str] = set()
    for node in walk(func):
        if isinstance(node, (ast.If, ast.While, ast.Assert, ast.IfExp)):
            for part in _conjuncts(node.test):
                if not _none_test(part):
                    guarded |= _names(part)
        elif isinstance(node, ast.Call):
            callee = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", "")
            if callee in ("max", "maximum", "clamp", "clamp_", "clamp_min", "clip", "where", "nan_to_num"):
                guarded |= _names(node)
    return guarded


def _conjuncts(test: ast.expr) -> list[ast.expr]:
    """The operands of a test's top-level ``and`` (the test itself otherwise)."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return [part for value in test.values for part in _conjuncts(value)]
    return [test]


def _none_test(test: ast.expr) -> bool:
    """``x is None`` / ``x is not None``."""
    return isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], (ast.Is, ast.IsNot)) \
        and isinstance(test.comparators[0], ast.Constant) and test.comparators[0].value is None


def _no_grad(node: ast.With | ast.AsyncWith) -> bool:
    return any("no_grad" in ast.unparse(item.context_expr) or "inference_mode" in ast.unparse(item.context_expr)
               for item in node.items)


def _target_of(func: ast.AST, division: ast.BinOp) -> str | None:
    """The name the division is assigned to (``loss = ... / n``), or ``return`` (a hook's result)."""
    for node in walk(func):
        if isinstance(node, ast.Assign) and any(n is division for n in ast.walk(node.value)):
            return " ".join(ast.unparse(t) for t in node.targets)
        if isinstance(node, ast.Return) and node.value is not None and any(n is division for n in ast.walk(node.value)):
            return "return loss" if isinstance(func, ast.FunctionDef) and "loss" in func.name else None
    return None


def _loss_like(text: str) -> bool:
    """Whether an expression or target reads like a loss (``loss``, ``kl``, ``nll``, ``ce``...)."""
    lowered = text.lower()
    tokens = re.split(r"[^a-z0-9]+", lowered)
    return "cross_entropy" in lowered or any(t in ("nll", "kl", "ce") or "loss" in t for t in tokens)


def _name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _name(node.value)
        return f"{base}.{node.attr}" if base else None
    return None


def _names(node: ast.AST) -> set[str]:
    found = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
    return found | {text for n in ast.walk(node) if isinstance(n, ast.Attribute) and (text := _name(n))}
