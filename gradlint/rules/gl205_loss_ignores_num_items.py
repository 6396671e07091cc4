"""GL205 loss-ignores-num-items: an HF Trainer loss hook that ignores ``num_items_in_batch``."""

from __future__ import annotations

import ast
from collections.abc import Iterator, Sequence

from gradlint.catalogue import CATALOGUE
from gradlint.diagnostics import Span
from gradlint.model.events import TrainingLoop
from gradlint.model.trainer_classes import HOOK_WORD, LOSS_FUNC_CALL, ignored_counts
from gradlint.project.context import ProjectContext
from gradlint.rules.base import Finding, Invalid, ModuleRule, span_of


class LossIgnoresNumItems(ModuleRule):
    info = CATALOGUE["GL205"]
    words = (HOOK_WORD,)

    def check_module(self, tree: ast.Module, lines: list[str], loops: Sequence[TrainingLoop] = (),
                     project: ProjectContext | None = None) -> Iterator[Finding]:
        for hook in ignored_counts(tree, project):
            node = hook.node
            span = span_of(node, lines) if isinstance(node, ast.keyword) else _def_line(node, lines)
            if hook.hook == LOSS_FUNC_CALL:
                yield Finding(span, f"{hook.owner}.compute_loss calls {LOSS_FUNC_CALL} without num_items_in_batch "
                              "(gradient N times too large)", detail="With a compute_loss_func set the "
                              "Trainer never divides by N, so that call's per-micro-batch mean is N times too "
                              "large; pass num_items_in_batch on and divide the summed loss by it.")
            elif hook.owner is not None:
                yield Finding(span, f"{hook.owner}.compute_loss ignores num_items_in_batch, so the gradient is N "
                              "times too large", detail="When the model accepts loss kwargs the Trainer skips its "
                              "own 1/N, so a per-micro-batch mean is N times too large; divide the summed loss by "
                              "num_items_in_batch, pass it on, or set self.model_accepts_loss_kwargs = False.")
            else:
                yield Finding(span, f"compute_loss_func={hook.hook} ignores num_items_in_batch, so the gradient is N "
                              "times too large", detail="The Trainer skips its own 1/N for a compute_loss_func, so "
                              "a per-micro-batch mean is N times too large; sum the loss and divide by "
                              "num_items_in_batch.")

    VALID = (
        """\
from transformers import Trainer


class WeightedTrainer(Trainer):
    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        outputs = model(**inputs)
        loss = weighted_token_loss(outputs.logits, inputs["labels"], reduction="sum")
        if num_items_in_batch is not None:
            loss = loss / num_items_in_batch
        return (loss, outputs) if return_outputs else loss
""",
        """\
from transformers import Trainer


class TaggedTrainer(Trainer):
    def compute_loss(self, model, inputs, return_outputs=False, **kwargs):
        inputs.pop("tags")
        return super().compute_loss(model, inputs, return_outputs, **kwargs)
""",
        """\
from transformers import Trainer


class ContrastiveTrainer(Trainer):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.model_accepts_loss_kwargs = False

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        return contrastive_loss(model(**inputs))
""",
    )
    INVALID = (
        Invalid("""\
from transformers import Trainer


class FocalTrainer(Trainer):
    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        labels = inputs.pop("labels")
        outputs = model(**inputs)
        loss = focal_loss(outputs.logits, labels)
        return (loss, outputs) if return_outputs else loss
""", ((5, "GL205"),)),
        Invalid("""\
import transformers


def token_loss(outputs, labels, num_items_in_batch=None):
    return cross_entropy(outputs.logits.flatten(0, 1), labels.flatten())


trainer = transformers.Trainer(model=model, args=args, compute_loss_func=token_loss)
""", ((8, "GL205"),)),
    )


def _def_line(node: ast.FunctionDef | ast.AsyncFunctionDef, lines: list[str]) -> Span:
    """``def compute_loss`` on the definition's line (decorators are above it)."""
    line = lines[node.lineno - 1] if node.lineno <= len(lines) else ""
    start = len(line) - len(line.lstrip())
    keyword = "async def " if isinstance(node, ast.AsyncFunctionDef) else "def "
    return Span(node.lineno, start + 1, node.lineno, start + len(keyword) + len(node.name) + 1)
