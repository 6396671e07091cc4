"""What a name stands for: import aliases, constructor tables and receiver-name conventions.

gradlint resolves imported names with a small alias table (``import torch.nn as nn``,
``from torch.nn.utils import clip_grad_norm_ as clip``) instead of whole-file qualified-name
metadata: the same answers for the names training loops use, at a fraction of the cost.
"""

from __future__ import annotations

import ast
import re
from enum import Enum


class Kind(str, Enum):
    """What kind of training object a name is bound to."""

    OPTIMIZER = "optimizer"
    SCHEDULER = "scheduler"
    METRIC_SCHEDULER = "metric-scheduler"  # ReduceLROnPlateau: stepped on a metric
    SCALER = "scaler"
    ACCELERATOR = "accelerator"
    FABRIC = "fabric"
    ENGINE = "engine"  # a DeepSpeed engine: owns scaling, clipping and the boundary
    ENGINE_PART = "engine-part"  # optimizer / scheduler returned by deepspeed.initialize
    DDP_MODEL = "ddp-model"


CLIP_FUNCTIONS = frozenset({"clip_grad_norm_", "clip_grad_value_", "clip_grad_norm", "clip_grad_value"})
FRAMEWORK_CLIP_METHODS = frozenset({"clip_grad_norm_", "clip_grad_value_", "clip_gradients"})

_OPTIMIZER_CLASSES = frozenset(
    {
        "Adam", "AdamW", "SGD", "Adagrad", "Adadelta", "Adamax", "RMSprop", "Rprop", "NAdam",
        "RAdam", "LBFGS", "SparseAdam", "Adafactor", "Lion", "LAMB", "Lamb", "FusedAdam",
        "FusedLAMB", "FusedSGD", "DeepSpeedCPUAdam", "AdamW8bit", "Adam8bit", "PagedAdamW",
        "PagedAdamW8bit", "Muon", "SophiaG", "Adan", "ZeroRedundancyOptimizer", "DPOptimizer",
    }
)
_OPTIMIZER_FACTORIES = ("create_optimizer", "build_optimizer", "get_optimizer", "make_optimizer")

_OPT_NAME = re.compile(r"optimi[sz]er|^optim$|^opt$|^opt_|_opt$|^opt[A-Z0-9]|^optim_|_optim$|^optims?$|_optim_wrapper$", re.I)
_SCHED_NAME = re.compile(r"sched", re.I)
_WRAPPER_NAME = re.compile(r"^optimi[sz]er_?sched[a-z]*r$", re.I)
"""An optimizer-and-schedule wrapper (``self.optimizer_scheduler``), named like the constructor
:func:`constructor_kind` reads as one (``OptimizerScheduler(...)``); not ``optimizer_schedules``."""
_OPTIMIZERS_NAME = re.compile(r"(^|_)(optimi[sz]ers|optims|opts)$", re.I)
_SCHEDULERS_NAME = re.compile(r"(^|_)(lr_)?schedulers$", re.I)
_SCALER_NAME = re.compile(r"scaler$", re.I)
_ENGINE_NAME = re.compile(r"(^|_)engine$", re.I)
_UPDATE_COUNTER = re.compile(r"step|update|iter|^it$|^itr$", re.I)
_MICRO_COUNTER = re.compile(r"micro|accum|batch|sample|token|seen", re.I)


def build_alias_table(imports: list[tuple[str | None, str, str | None]]) -> dict[str, str]:
    """Map local names to qualified names from ``(module, name, asname)`` import triples.

    ``module`` is None for ``import a.b`` statements, the module path for ``from m import n``.
    """
    table: dict[str, str] = {}
    for module, name, asname in imports:
        if module is None:
            if asname:
                table[asname] = name
            else:
                top = name.split(".")[0]
                table[top] = top
        elif name != "*":
            table[asname or name] = f"{module}.{name}"
    return table


def resolve(dotted: str, aliases: dict[str, str]) -> str:
    """Expand the first component of ``dotted`` through the alias table."""
    head, _, rest = dotted.partition(".")
    base = aliases.get(head, head)
    return f"{base}.{rest}" if rest else base


def constructor_kind(qualified: str) -> Kind | None:
    """The kind of object a call to ``qualified`` returns, when it is a known constructor."""
    parts = qualified.split(".")
    last = parts[-1]
    low = last.lower()
    if last in ("GradScaler", "ShardedGradScaler"):
        return Kind.SCALER
    if last == "ReduceLROnPlateau":
        return Kind.METRIC_SCHEDULER
    if last == "Accelerator":
        return Kind.ACCELERATOR
    if last == "Fabric":
        return Kind.FABRIC
    if last in ("DistributedDataParallel", "DDP"):
        return Kind.DDP_MODEL
    if low.startswith("optimizer") and last[:1].isupper():
        return Kind.OPTIMIZER  # a wrapper that steps its optimizer, then its schedule
    if "lr_scheduler" in parts or "schedule" in low or low.endswith("lr") and last[:1].isupper():
        return Kind.SCHEDULER
    if "swa_utils" in parts:
        return None
    if qualified.startswith("torch.optim.") or last in _OPTIMIZER_CLASSES:
        return Kind.OPTIMIZER
    if low.startswith(_OPTIMIZER_FACTORIES) or (last.endswith("Optimizer") and last[:1].isupper()):
        return Kind.OPTIMIZER
    return None


def kind_by_name(dotted: str) -> Kind | None:
    """Guess a receiver's kind from the naming conventions training code uses."""
    last = dotted.rsplit(".", 1)[-1]
    if last == "accelerator":
        return Kind.ACCELERATOR
    if last == "fabric":
        return Kind.FABRIC
    if _SCALER_NAME.search(last):
        return Kind.SCALER
    if _WRAPPER_NAME.search(last):
        return Kind.OPTIMIZER  # `optimizer_scheduler`: steps its optimizer, then its schedule
    if _SCHED_NAME.search(last):
        return Kind.SCHEDULER
    if _OPT_NAME.search(last):
        return Kind.OPTIMIZER
    if _ENGINE_NAME.search(last):
        return Kind.ENGINE
    return None


def element_kind_by_name(name: str) -> Kind | None:
    """Guess the kind of a container's elements from its plural name: a dict or list of
    optimizers (``optimizers``, ``g_optims``) or of schedulers (``lr_schedulers``)."""
    if _OPTIMIZERS_NAME.search(name):
        return Kind.OPTIMIZER
    if _SCHEDULERS_NAME.search(name):
        return Kind.SCHEDULER
    return None


def counts_updates(dotted: str) -> bool:
    """Whether a counter is named like a count of optimizer updates (``global_step``,
    ``self.iteration``), not of micro-batches, samples or tokens (``micro_step``, ``seen``)."""
    last = dotted.rsplit(".", 1)[-1]
    return bool(_UPDATE_COUNTER.search(last)) and not _MICRO_COUNTER.search(last)


def dotted_name(node: ast.AST) -> str | None:
    """``a.b.c`` for a Name/Attribute chain, else None."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        parts.append(node.id)
        return ".".join(reversed(parts))
    return None
