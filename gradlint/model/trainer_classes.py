"""Hugging Face ``Trainer`` subclasses of one module and the loss hooks they define.

The HF Trainer owns the training loop; a subclass only supplies ``compute_loss`` (or a
``compute_loss_func=`` passed to the constructor). When the model accepts loss kwargs the
Trainer hands ``num_items_in_batch`` (the window's count of valid targets) to that hook and
skips its own 1/N, so a hook that ignores it returns a per-micro-batch mean that is N times
too large. This module reads, from the module's ``ast`` alone, which classes derive from the
Trainer (directly, through classes of the same module, or through :data:`HF_TRAINER_BASES`)
and whether their hook reads or forwards the count.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

HF_TRAINER_BASES = frozenset({
    "transformers.Trainer",
    "transformers.Seq2SeqTrainer",
    "transformers.trainer.Trainer",
    "transformers.trainer_seq2seq.Seq2SeqTrainer",
})
"""Known bases, by qualified name, whose ``training_step`` passes ``num_items_in_batch`` to
``compute_loss`` and divides by N only when the model does not accept loss kwargs. trl's
trainers are left out: several of them compute their own loss or set
``model_accepts_loss_kwargs = False``, which gradlint cannot tell from the subclass."""

COUNT = "num_items_in_batch"
HOOK_WORD = "compute_loss"
"""A module without this word defines no loss hook (the engine's text test)."""


@dataclass(frozen=True)
class IgnoredCount:
    """A loss hook that accepts ``num_items_in_batch`` and neither reads nor forwards it."""

    node: ast.FunctionDef | ast.AsyncFunctionDef | ast.keyword  # the method, or the `compute_loss_func=` argument
    hook: str  # "compute_loss" of class ``owner``, or the function passed as ``compute_loss_func=``
    owner: str | None


def ignored_counts(tree: ast.Module) -> list[IgnoredCount]:
    """Every hook of ``tree`` that ignores the count: ``def compute_loss`` of a Trainer
    subclass that does not set ``model_accepts_loss_kwargs = False``, and each
    ``compute_loss_func=f`` argument whose ``f`` is a function of the module."""
    aliases = _aliases(tree)
    classes = {node.name: node for node in tree.body if isinstance(node, ast.ClassDef)}
    found: list[IgnoredCount] = []
    for cls in classes.values():
        lineage = _trainer_lineage(cls, classes, aliases)
        if lineage is None or any(_opts_out(c) or _own_training_step(c) for c in lineage):
            continue
        for item in cls.body:
            if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name == HOOK_WORD \
                    and _ignores_count(item, method=True) and _reads_labels(item):
                found.append(IgnoredCount(item, HOOK_WORD, cls.name))
    functions = {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        for keyword in node.keywords:
            if keyword.arg != "compute_loss_func" or not isinstance(keyword.value, ast.Name):
                continue
            func = functions.get(keyword.value.id)
            if func is not None and _ignores_count(func, method=False):
                found.append(IgnoredCount(keyword, func.name, None))
    return found


def _aliases(tree: ast.Module) -> dict[str, str]:
    """Local name -> qualified name, from the module's top-level imports."""
    found: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                found[alias.asname or alias.name] = f"{node.module}.{alias.name}"
        elif isinstance(node, ast.Import):
            for alias in node.names:
                found[alias.asname or alias.name.split(".")[0]] = alias.name if alias.asname else alias.name.split(".")[0]
    return found


def _dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return f"{base}.{node.attr}" if base else None
    return None


def _qualified(name: str, aliases: dict[str, str]) -> str:
    head, _, rest = name.partition(".")
    base = aliases.get(head, head)
    return f"{base}.{rest}" if rest else base


def _trainer_lineage(cls: ast.ClassDef, classes: dict[str, ast.ClassDef], aliases: dict[str, str],
                     depth: int = 8) -> list[ast.ClassDef] | None:
    """``cls`` and its same-module ancestors up to a known Trainer base; None when it does
    not derive from one (or the chain cannot be told)."""
    if depth == 0:
        return None
    for base in cls.bases:
        name = _dotted(base)
        if name is None:
            continue
        if _qualified(name, aliases) in HF_TRAINER_BASES:
            return [cls]
        parent = classes.get(name)
        if parent is not None and parent is not cls:
            lineage = _trainer_lineage(parent, classes, aliases, depth - 1)
            if lineage is not None:
                return [cls, *lineage]
    return None


def _opts_out(cls: ast.ClassDef) -> bool:
    """The class sets ``model_accepts_loss_kwargs`` (to anything: then the Trainer's own
    division is the class's choice), as a class attribute or on ``self``."""
    for node in ast.walk(cls):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
            node, (ast.AnnAssign, ast.AugAssign)) else []
        for target in targets:
            if isinstance(target, ast.Name) and target.id == "model_accepts_loss_kwargs":
                return True
            if isinstance(target, ast.Attribute) and target.attr == "model_accepts_loss_kwargs":
                return True
    return False


def _own_training_step(cls: ast.ClassDef) -> bool:
    """The class overrides ``training_step``: it decides the division by N itself."""
    return any(isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name == "training_step"
               for item in cls.body)


def _reads_labels(func: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """The hook handles ``labels`` (a name or the ``"labels"`` key). The Trainer counts
    ``num_items_in_batch`` from the batch's labels: without them it passes None and divides
    by N itself, so a hook whose batches carry none (an embedder's) is not shown to be wrong."""
    return any((isinstance(n, ast.Name) and n.id == "labels") or (isinstance(n, ast.Constant) and n.value == "labels")
               or (isinstance(n, ast.arg) and n.arg == "labels") for n in ast.walk(func))


def _ignores_count(func: ast.FunctionDef | ast.AsyncFunctionDef, *, method: bool) -> bool:
    """The function accepts the count (by name, or in ``**kwargs``) and never reads it: no
    ``num_items_in_batch`` in its body, and ``**kwargs`` neither read nor passed on."""
    args = func.args
    named = [a.arg for a in (*args.posonlyargs, *args.args, *args.kwonlyargs)]
    kwargs = args.kwarg.arg if args.kwarg is not None else None
    if COUNT not in named and kwargs is None:
        return False  # the Trainer's call would fail: not this rule's silent error
    if method and not named:
        return False
    read = {n.id for n in ast.walk(func) if isinstance(n, ast.Name)}
    if COUNT in read or (kwargs is not None and kwargs in read):
        return False
    return not any(isinstance(n, ast.Constant) and n.value == COUNT for n in ast.walk(func))
