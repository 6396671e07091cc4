"""GL202 fixed-divisor-partial-window: a fixed 1/N while the loop also steps on a shorter
final window."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from gradlint.catalogue import CATALOGUE
from gradlint.model.events import TrainingLoop
from gradlint.model.loss import LossTrace
from gradlint.model.syntax import dotted
from gradlint.rules.base import Finding, Invalid, Rule
from gradlint.rules.readers import scaled_backwards


class FixedDivisorPartialWindow(Rule):
    info = CATALOGUE["GL202"]

    def check(self, loop: TrainingLoop) -> Iterator[Finding]:
        gate = loop.primary_gate
        if gate is None or not gate.final_branch:
            return
        for event in scaled_backwards(loop):
            divisor = _fixed_divisor(loop, event.loss_trace)
            if divisor is None:
                continue
            yield Finding(event.span, f"the loss is divided by the fixed {divisor}, which under-weights the "
                          "epoch's shorter final window", detail="The gate also steps on the final, shorter window "
                          "of the epoch, whose micro-batches are then under-weighted; divide by the number of "
                          "micro-batches actually in the window.")

    VALID = (
        """\
def train(model, loader, optimizer, accum_steps):
    for step, (x, y) in enumerate(loader):
        loss = model(x, y) / accum_steps
        loss.backward()
        if (step + 1) % accum_steps == 0:
            optimizer.step()
            optimizer.zero_grad()
""",
        """\
def train(model, loader, optimizer, accum_steps):
    for step, (x, y) in enumerate(loader):
        window = min(accum_steps, len(loader) - step + step % accum_steps)
        loss = model(x, y) / window
        loss.backward()
        if (step + 1) % accum_steps == 0 or step + 1 == len(loader):
            optimizer.step()
            optimizer.zero_grad()
""",
    )
    INVALID = (
        Invalid("""\
def train(model, loader, optimizer, accum_steps):
    for step, (x, y) in enumerate(loader):
        loss = model(x, y) / accum_steps
        loss.backward()
        if (step + 1) % accum_steps == 0 or step + 1 == len(loader):
            optimizer.step()
            optimizer.zero_grad()
""", ((4, "GL202"),)),
        Invalid("""\
def train(model, loader, optimizer, args):
    for step, (x, y) in enumerate(loader):
        logits, loss = model(x, y)
        divided = loss / args.accum_steps
        (divided * args.loss_multiplier).backward()
        if (step + 1) % args.accum_steps == 0 or step + 1 == len(loader):
            optimizer.step()
            optimizer.zero_grad()
""", ((5, "GL202"),)),
    )


def _fixed_divisor(loop: TrainingLoop, trace: LossTrace) -> str | None:
    """The divisor's text when the loss is divided by the fixed accumulation factor."""
    factor = loop.factor_code()
    for divisor in trace.divisors:
        if isinstance(divisor.node, cst.Integer) and divisor.node.evaluated_value > 1:
            return divisor.text
        if divisor.text == factor and (not loop.reassigns(divisor.text) or _read_from_config(loop, divisor.text)):
            return divisor.text
    return None


def _read_from_config(loop: TrainingLoop, name: str) -> bool:
    """The loop's unit gives ``name`` one value, a plain read (``acc =
    engine.accumulation_steps``) or a literal: the same N on every pass, not a window size."""
    values = loop.unit.bound_values(name)
    return len({loop.unit.text_of(v) for v in values}) == 1 and all(
        isinstance(v, cst.Integer) or (isinstance(v, cst.BaseExpression) and dotted(v) is not None) for v in values)
