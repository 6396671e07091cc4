"""GL206 unguarded-valid-count: a training loss divided by a valid-target count that may be 0."""

from __future__ import annotations

import ast
from collections.abc import Iterator, Sequence

from gradlint.catalogue import CATALOGUE
from gradlint.diagnostics import Edit, Fix
from gradlint.model.events import TrainingLoop
from gradlint.model.loss_funcs import loss_functions
from gradlint.model.valid_counts import (
    COUNT_NAME,
    UnguardedDivision,
    divisions_in,
    training_function,
    unguarded_divisions,
)
from gradlint.project.context import ProjectContext
from gradlint.rules.base import Finding, Invalid, ModuleRule, span_of

_DETAIL = "A micro-batch (or window) whose targets are all ignored gives 0 / 0 and fills every gradient with NaN."


def _message(found: UnguardedDivision) -> str:
    return f"the loss is divided by {found.count}, a count of valid targets that can be 0; clamp it to at least 1"


class UnguardedValidCount(ModuleRule):
    info = CATALOGUE["GL206"]
    words = (".sum(", COUNT_NAME, "compute_loss_func")

    def check_module(self, tree: ast.Module, lines: list[str], loops: Sequence[TrainingLoop] = (),
                     project: ProjectContext | None = None) -> Iterator[Finding]:
        for found in unguarded_divisions(tree, lines):
            yield self._finding(found, lines)
        for function in loss_functions(tree, project):
            if function.home is None and training_function(function.node):
                continue  # read above
            for found in divisions_in(function.node):
                if function.home is None or function.lines is None:
                    yield self._finding(found, lines)
                else:  # a loss function of another module: reported there, without a fix
                    yield Finding(span_of(found.division, function.lines), _message(found), detail=_DETAIL,
                                  home=(function.home, function.chosen_at))

    def _finding(self, found: UnguardedDivision, lines: list[str]) -> Finding:
        return Finding(span_of(found.division, lines), _message(found), self._clamp(found, lines), detail=_DETAIL)

    def _clamp(self, found: UnguardedDivision, lines: list[str]) -> Fix | None:
        """``count.clamp(min=1)`` for a tensor count, ``max(count, 1)`` otherwise."""
        applicability = self.info.fix
        if applicability is None:
            return None
        divisor = found.divisor
        text = found.count
        atomic = isinstance(divisor, (ast.Name, ast.Attribute, ast.Call, ast.Subscript))
        if found.tensor and atomic:
            new = f"{text}.clamp(min=1)"
        elif found.tensor or not atomic:
            return None
        else:
            new = f"max({text}, 1)"
        span = span_of(divisor, lines)
        if span.line != span.end_line:
            return None
        return Fix(applicability, f"Clamp the count: `{new}`", (Edit(span, new),))

    VALID = (
        """\
def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
    outputs = model(**inputs)
    loss = outputs.loss_sum / max(num_items_in_batch, 1)
    return loss
""",
        """\
def train_step(model, batch, optimizer):
    logits = model(batch["input_ids"])
    mask = batch["labels"] != -100
    token_loss = cross_entropy(logits, batch["labels"], reduction="none")
    loss = (token_loss * mask).sum() / mask.sum().clamp(min=1)
    loss.backward()
""",
        """\
def evaluate(model, batch):
    mask = batch["attention_mask"]
    loss = (model(batch) * mask).sum() / mask.sum()
    return loss
""",
    )
    INVALID = (
        Invalid("""\
def train_step(model, batch, optimizer):
    logits = model(batch["input_ids"])
    mask = batch["labels"] != -100
    token_loss = cross_entropy(logits, batch["labels"], reduction="none")
    loss = (token_loss * mask).sum() / mask.sum()
    loss.backward()
""", ((5, "GL206"),), fixed="""\
def train_step(model, batch, optimizer):
    logits = model(batch["input_ids"])
    mask = batch["labels"] != -100
    token_loss = cross_entropy(logits, batch["labels"], reduction="none")
    loss = (token_loss * mask).sum() / mask.sum().clamp(min=1)
    loss.backward()
"""),
        Invalid(f"""\
class SumTrainer(Trainer):
    def compute_loss(self, model, inputs, return_outputs=False, {COUNT_NAME}=None):
        outputs = model(**inputs)
        loss = outputs.loss.sum() / {COUNT_NAME}
        return loss
""", ((4, "GL206"),), fixed=f"""\
class SumTrainer(Trainer):
    def compute_loss(self, model, inputs, return_outputs=False, {COUNT_NAME}=None):
        outputs = model(**inputs)
        loss = outputs.loss.sum() / max({COUNT_NAME}, 1)
        return loss
"""),
    )
