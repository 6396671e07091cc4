"""Hugging Face ``Trainer`` subclasses of one module and the loss hooks they define.

The HF Trainer owns the training loop; a subclass only supplies ``compute_loss`` (or a
``compute_loss_func=`` passed to the constructor). When the model accepts loss kwargs the
Trainer hands ``num_items_in_batch`` (the window's count of valid targets) to that hook and
skips its own 1/N, so a hook that ignores it returns a per-micro-batch mean that is N times
too large. This module reads, from the module's ``ast`` (and the project's classes), which
classes derive from the Trainer (directly, through classes of the module or of the project, up
to one of :data:`HF_TRAINER_BASES`) and whether their hook reads or forwards the count.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from gradlint.project.index import ProjectIndex
from gradlint.project.kinds import KindReader
from gradlint.project.symbols import ClassInfo, Definition
from gradlint.walks import walk


class ProjectContext(Protocol):
    """What this module reads of :class:`gradlint.project.context.ProjectContext` (which it
    cannot import: the context reads the screen, and the screen reads this module)."""

    @property
    def path(self) -> Path: ...

    @property
    def index(self) -> ProjectIndex: ...

    @property
    def kinds(self) -> KindReader: ...

HF_TRAINER_BASES = frozenset({
    "transformers.Trainer",
    "transformers.Seq2SeqTrainer",
    "transformers.trainer.Trainer",
    "transformers.trainer_seq2seq.Seq2SeqTrainer",
    "trl.SFTTrainer",
    "trl.trainer.SFTTrainer",
    "trl.trainer.sft_trainer.SFTTrainer",
})
"""Known bases, by qualified name, whose ``training_step`` passes ``num_items_in_batch`` to
``compute_loss`` and divides by N only when the model does not accept loss kwargs. Of trl's
trainers only ``SFTTrainer`` leaves that contract as it is (it keeps the base's
``loss_is_scaled_for_ga = None``); ``DPOTrainer``, ``KTOTrainer``, ``RewardTrainer``,
``RLOOTrainer``, ``ORPOTrainer`` and ``CPOTrainer`` set ``loss_is_scaled_for_ga = False`` (so
``model_accepts_loss_kwargs = False``: the Trainer divides), and ``GRPOTrainer`` and the
distillation trainers scale their own loss; subclasses of those are not this rule's."""

_OPT_OUTS = frozenset({"model_accepts_loss_kwargs", "loss_is_scaled_for_ga"})
"""Attributes a class sets to tell the Trainer how its loss is scaled (then the Trainer's own
division, or its absence, is the class's choice)."""

COUNT = "num_items_in_batch"
HOOK_WORD = "compute_loss"
LOSS_FUNC_CALL = "self.compute_loss_func"
"""A module without this word defines no loss hook (the engine's text test)."""


@dataclass(frozen=True)
class IgnoredCount:
    """A loss hook that accepts ``num_items_in_batch`` and neither reads nor forwards it."""

    node: ast.FunctionDef | ast.AsyncFunctionDef | ast.keyword  # the method, or the `compute_loss_func=` argument
    hook: str  # "compute_loss" of class ``owner`` (LOSS_FUNC_CALL: it calls one without the count), or the
    # function passed as ``compute_loss_func=``
    owner: str | None


def ignored_counts(tree: ast.Module, project: ProjectContext | None = None) -> list[IgnoredCount]:
    """Every hook of ``tree`` that ignores the count: ``def compute_loss`` of a Trainer
    subclass that does not opt out (:data:`_OPT_OUTS`), and each ``compute_loss_func=f``
    argument whose ``f`` is a function of the module or of another project module. Bases are
    followed through the module and, with ``project``, through the project's classes."""
    lineage = _Lineage(tree, project)
    found: list[IgnoredCount] = []
    chains = trainer_subclasses(tree, lineage)
    known = {id(cls) for cls, _ in chains}
    chains += [(cls, [cls]) for cls in lineage.classes.values() if id(cls) not in known and _run_time_trainer(cls, tree)]
    for cls, chain in chains:
        if any(_own_training_step(c) for c in chain):
            continue
        opts_out = any(_opts_out(c) for c in chain)  # no bearing on a compute_loss_func: never divided
        for item in cls.body:
            if not isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) or item.name != HOOK_WORD \
                    or not _reads_labels(item):
                continue
            if not opts_out and _ignores_count(item, method=True):
                found.append(IgnoredCount(item, HOOK_WORD, cls.name))
            elif _uncounted_loss_func(item):
                found.append(IgnoredCount(item, LOSS_FUNC_CALL, cls.name))
    functions = {n.name: n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
    for node in walk(tree):
        if not isinstance(node, ast.Call):
            continue
        for keyword in node.keywords:
            if keyword.arg != "compute_loss_func" or not isinstance(keyword.value, (ast.Name, ast.Attribute)):
                continue
            func = functions.get(keyword.value.id) if isinstance(keyword.value, ast.Name) else None
            if func is None:
                func = lineage.project_function(keyword.value)
            if func is not None and _ignores_count(func, method=False):
                found.append(IgnoredCount(keyword, func.name, None))
    return found


def trainer_subclasses(tree: ast.Module, lineage: _Lineage | None = None,
                       ) -> list[tuple[ast.ClassDef, list[ast.ClassDef]]]:
    """Each class of ``tree`` that derives from a known Trainer base, with its lineage (the
    class and its ancestors up to that base); ``lineage`` reads bases (default: the module's)."""
    lineage = lineage or _Lineage(tree, None)
    found = []
    for cls in lineage.classes.values():
        chain = lineage.of(cls, lineage.aliases, lineage.path, 8)
        if chain is not None:
            found.append((cls, chain))
    return found


class _Lineage:
    """Ancestors of the module's classes up to a known Trainer base: classes of the module, then
    (with a project) classes of other project modules, each read with its own module's imports."""

    def __init__(self, tree: ast.Module, project: ProjectContext | None) -> None:
        self.project = project
        self.path = project.path if project is not None else None
        self.aliases = _aliases(tree)
        self.classes = {node.name: node for node in tree.body if isinstance(node, ast.ClassDef)}

    def of(self, cls: ast.ClassDef, aliases: dict[str, str], path: Path | None,
           depth: int) -> list[ast.ClassDef] | None:
        """``cls`` and its ancestors up to a known Trainer base; None when it does not derive
        from one (or the chain cannot be told)."""
        if depth == 0:
            return None
        local = self.classes if path == self.path else {}
        for base in cls.bases:
            name = _dotted(base)
            if name is None:
                continue
            if _qualified(name, aliases) in HF_TRAINER_BASES:
                return [cls]
            parent = local.get(name)
            if parent is not None and parent is not cls:
                lineage = self.of(parent, aliases, path, depth - 1)
            else:
                lineage = self._project_base(name, path, depth - 1)
            if lineage is not None:
                return [cls, *lineage]
        return None

    def _project_base(self, name: str, path: Path | None, depth: int) -> list[ast.ClassDef] | None:
        """The lineage of base ``name`` (written in module ``path``) when it is a project class."""
        if self.project is None or path is None:
            return None
        found = self.project.index.lookup(path, name)
        if not isinstance(found, ClassInfo):
            return None
        home = found.definition.path
        tree = self.project.index.tree(home)
        node = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.lineno == found.definition.line),
                    None) if tree is not None else None
        if node is None or tree is None:
            return None
        return self.of(node, _aliases(tree), home, depth)

    def project_function(self, value: ast.expr) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
        """The project function ``value`` (a name or ``module.f``) names in another module."""
        name = _dotted(value)
        if self.project is None or self.path is None or name is None:
            return None
        found = self.project.index.lookup(self.path, name)
        return self.project.kinds.node(found) if isinstance(found, Definition) and "." not in found.qualname else None


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


_HOOK_PARAMS = ["self", "model", "inputs", "return_outputs", COUNT]
"""The HF Trainer's ``compute_loss`` parameters, in its order."""


def _run_time_trainer(cls: ast.ClassDef, tree: ast.Module) -> bool:
    """A class whose base is a class chosen at run time (a module-level name assigned a call's
    result: ``Trainer = library.trainer()``, a lazy import) and whose ``compute_loss`` has the
    HF Trainer's own parameters (``self, model, inputs, return_outputs, num_items_in_batch``):
    that signature is the Trainer's loss-hook protocol, so the base is taken to be an HF Trainer."""
    chosen = {t.id for node in tree.body if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
              for t in node.targets if isinstance(t, ast.Name)}
    if not any(isinstance(b, ast.Name) and b.id in chosen for b in cls.bases):
        return False
    return any(isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name == HOOK_WORD
               and [a.arg for a in (*item.args.posonlyargs, *item.args.args)] == _HOOK_PARAMS for item in cls.body)


def _opts_out(cls: ast.ClassDef) -> bool:
    """The class sets one of :data:`_OPT_OUTS` (to anything), as a class attribute or on ``self``."""
    for node in walk(cls):
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
            node, (ast.AnnAssign, ast.AugAssign)) else []
        for target in targets:
            if isinstance(target, ast.Name) and target.id in _OPT_OUTS:
                return True
            if isinstance(target, ast.Attribute) and target.attr in _OPT_OUTS:
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
               or (isinstance(n, ast.arg) and n.arg == "labels") for n in walk(func))


def _uncounted_loss_func(func: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """The hook calls ``self.compute_loss_func(...)`` without the count (no
    ``num_items_in_batch`` and no ``**kwargs`` among its arguments). With a ``compute_loss_func``
    set the Trainer never divides by N itself, so that call's per-micro-batch mean is N times
    too large, whatever the hook does on its other paths."""
    kwargs = func.args.kwarg.arg if func.args.kwarg is not None else None
    for node in walk(func):
        if not (isinstance(node, ast.Call) and _dotted(node.func) == "self.compute_loss_func"):
            continue
        passed = [*node.args, *(k.value for k in node.keywords)]
        if any(k.arg in (None, COUNT) for k in node.keywords) or any(
                isinstance(n, ast.Name) and n.id in (COUNT, kwargs) for a in passed for n in ast.walk(a)):
            continue
        return True
    return False


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
    read = {n.id for n in walk(func) if isinstance(n, ast.Name)}
    if COUNT in read or (kwargs is not None and kwargs in read):
        return False
    return not any(isinstance(n, ast.Constant) and n.value == COUNT for n in walk(func))
