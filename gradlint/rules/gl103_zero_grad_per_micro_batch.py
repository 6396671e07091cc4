"""GL103 zero-grad-per-micro-batch: gradients zeroed between backward calls of one window."""

from __future__ import annotations

import re
from collections.abc import Iterator

import libcst as cst

from gradlint.catalogue import CATALOGUE
from gradlint.fixes import primitives as edit
from gradlint.model.events import Event, Role, TrainingLoop
from gradlint.names import Kind
from gradlint.rules.base import Change, Finding, Invalid, Rule
from gradlint.rules.readers import (
    OWN_STEP,
    backward_before,
    call_text,
    paired_step_text,
    per_micro_batch,
    quoted,
    sole_step,
    steps_of,
)

_GRAD_READ = re.compile(r"\.grad\b(?!\s*=[^=])")


class ZeroGradPerMicroBatch(Rule):
    info = CATALOGUE["GL103"]

    def check(self, loop: TrainingLoop) -> Iterator[Finding]:
        for event in per_micro_batch(loop, Role.ZERO_GRAD):
            if loop.accelerate_skips(event) or _drops_window(loop, event) or _reads_gradients_first(loop, event):
                continue
            after = paired_step_text(loop, event, OWN_STEP if event.kind is Kind.OPTIMIZER else "the optimizer step")
            yield Finding(event.span, f"{call_text(loop, event)} zeroes inside the accumulation window; zero right "
                          f"after {after}", self.fix(_zero_once, loop, event),
                          detail="It runs between backward calls of one window and wipes the gradients accumulated "
                          "so far, so the step sees only the micro-batches after it.")

    VALID = (
        """\
def train(model, loader, optimizer, accum_steps):
    for step, (x, y) in enumerate(loader):
        (model(x, y) / accum_steps).backward()
        if (step + 1) % accum_steps == 0:
            optimizer.step()
            optimizer.zero_grad()
""",
        """\
def train(model, loader, optimizer, accum_steps):
    for step, (x, y) in enumerate(loader):
        loss = model(x, y) / accum_steps
        if not torch.isfinite(loss):
            optimizer.zero_grad()
            continue
        loss.backward()
        if (step + 1) % accum_steps == 0:
            optimizer.step()
            optimizer.zero_grad()
""",
        """\
def train_step(model, samples, optimizer, world_size):
    for sample in samples:
        try:
            (model(sample) / len(samples)).backward()
        except RuntimeError as e:
            if "out of memory" not in str(e):
                raise
            optimizer.zero_grad()
            if world_size == 1:
                return None
    optimizer.step()
    optimizer.zero_grad()
""",
        """\
def backward_each(losses, params, optimizer):
    grads = []
    for loss in losses:
        loss.backward(retain_graph=True)
        grads.append(torch.cat([p.grad.flatten() for p in params]))
        for p in params:
            p.grad = None
    for p, g in zip(params, unflatten(solve(grads), params)):
        p.grad = g
    optimizer.step()
""",
    )
    INVALID = (
        Invalid("""\
def train(model, loader, optimizer, accum_steps):
    for step, (x, y) in enumerate(loader):
        optimizer.zero_grad()
        (model(x, y) / accum_steps).backward()
        if (step + 1) % accum_steps == 0:
            optimizer.step()
""", ((3, "GL103"),), fixed="""\
def train(model, loader, optimizer, accum_steps):
    for step, (x, y) in enumerate(loader):
        (model(x, y) / accum_steps).backward()
        if (step + 1) % accum_steps == 0:
            optimizer.step()
            optimizer.zero_grad()
"""),
        Invalid("""\
def d_step(self, batch, optim_wrapper):
    d_optim_wrapper = optim_wrapper["discriminator"]
    d_optim_wrapper.backward(d_optim_wrapper.scale_loss(self.loss_real(batch)))
    d_optim_wrapper.zero_grad()
    d_optim_wrapper.backward(d_optim_wrapper.scale_loss(self.loss_fake(batch)))
    if d_optim_wrapper.should_update():
        d_optim_wrapper.step()
""", ((4, "GL103"),)),
    )


def _drops_window(loop: TrainingLoop, zero: Event) -> bool:
    """A zero_grad in a branch that then leaves the iteration with no backward after it
    (``if not torch.isfinite(loss): optimizer.zero_grad(); continue``), or an ``except``
    handler that zeroes with no backward after it (an out-of-memory recovery, moving on or
    not), drops the window on purpose."""
    chain = zero.ancestors
    start = next((i for i, node in enumerate(chain) if node is loop.root), 0)
    for i in range(start + 1, len(chain)):
        block = chain[i]
        if isinstance(block, cst.ExceptHandler) and not any(b.order > zero.order and b.inside(block)
                                                             for b in loop.of(Role.BACKWARD)):
            return True  # recovery from a failed micro-batch (out of memory): the window is given up
        if not (isinstance(block, cst.IndentedBlock) and isinstance(chain[i - 1], (cst.If, cst.Else, cst.ExceptHandler))):
            continue
        last = block.body[-1] if block.body else None
        leaves = isinstance(last, cst.SimpleStatementLine) and bool(last.body) and isinstance(
            last.body[-1], (cst.Continue, cst.Break, cst.Return, cst.Raise))
        if leaves and not any(b.order > zero.order and b.inside(block) for b in loop.of(Role.BACKWARD)):
            return True
    return False


def _reads_gradients_first(loop: TrainingLoop, zero: Event) -> bool:
    """Code between the last backward and the zero reads ``.grad`` (collecting per-loss
    gradients for a gradient-surgery solve, or a probe backward checked and then cleared):
    the gradients are consumed, not accumulated."""
    backward = backward_before(loop, zero)
    if backward is None or backward.unit is not zero.unit:
        return False
    lines = zero.unit.module.code.splitlines()
    offset = zero.unit.line_offset
    first, last = backward.span.end_line + 1, zero.span.line - 1
    return any(_GRAD_READ.search(lines[n - 1 - offset]) for n in range(first, last + 1)
               if 0 <= n - 1 - offset < len(lines))


def _zero_once(loop: TrainingLoop, zero: Event) -> Change | None:
    """Move zero_grad to the boundary, after the step, or remove it when the boundary already
    zeroes the same gradients and it runs unconditionally (never one under a test of its own,
    such as a non-finite loss dropping the window); unsafe: code between the two places may
    read ``.grad`` per micro-batch on purpose."""
    if loop.in_accumulate(zero) is not None:
        return _zero_after_accumulated_step(loop, zero)
    region = edit.update_region(loop)
    steps = steps_of(loop)
    if region is None or not steps or not all(edit.in_region(loop, region, s) for s in steps):
        return None
    if edit.twins(loop, region, zero):
        return Change(f"Remove {quoted(loop, zero)}: the update boundary already zeroes the gradients",
                      edit.remove_duplicate(loop, region, [zero]))
    return Change(f"Move {quoted(loop, zero)} to the update boundary, after the step",
                  edit.move(loop, [zero], edit.canonical(loop, region, Role.ZERO_GRAD, [zero])))


def _zero_after_accumulated_step(loop: TrainingLoop, zero: Event) -> Change | None:
    """Inside ``accelerator.accumulate()``: the prepared optimizer's zero_grad belongs after
    its step (Accelerate skips it until the boundary); the model's own zero_grad after the
    step becomes the optimizer's (assumes the optimizer holds the model's parameters)."""
    step = sole_step(loop)
    region = edit.block_region(loop, zero)
    if step is None or region is None or not edit.in_region(loop, region, step):
        return None
    if zero.kind is Kind.OPTIMIZER:
        return Change(f"Move {quoted(loop, zero)} after {quoted(loop, step)}",
                      edit.move(loop, [zero], edit.canonical(loop, region, Role.ZERO_GRAD, [zero])))
    optimizer = step.target
    if zero.order < step.order or optimizer is None or step.kind is not Kind.OPTIMIZER:
        return None
    receiver = zero.receiver_node
    if receiver is None:
        return None
    return Change(f"Zero through the prepared optimizer: `{optimizer}.zero_grad()`",
                  edit.replace(loop, receiver, optimizer))
