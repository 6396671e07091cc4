"""GL201 missing-accumulation-scaling: the loss of a window is not divided by N."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TypeVar

import libcst as cst

from gradlint.catalogue import CATALOGUE
from gradlint.fixes import primitives as edit
from gradlint.model.events import Event, Role, Shape, TrainingLoop
from gradlint.model.loss import Scaling, scales_gradients
from gradlint.model.syntax import dotted
from gradlint.rules.base import Change, Finding, Invalid, Rule
from gradlint.rules.readers import deepspeed_divisor, per_micro_batch

N = TypeVar("N", bound=cst.CSTNode)


class MissingAccumulationScaling(Rule):
    info = CATALOGUE["GL201"]

    def check(self, loop: TrainingLoop) -> Iterator[Finding]:
        factor = loop.factor_code()
        if factor is None or loop.shape is Shape.ACCELERATE or _scales_gradients(loop):
            return
        steps, zeros = per_micro_batch(loop, Role.STEP), per_micro_batch(loop, Role.ZERO_GRAD)
        unscaled = []
        for event in per_micro_batch(loop, Role.BACKWARD):
            if event.framework_divides or event.loss_trace.scaling is not Scaling.UNSCALED:
                continue
            if event.framework == "accelerate" and loop.factor is not None and deepspeed_divisor(loop.unit, loop.factor):
                continue  # N is DeepSpeed's: accelerator.backward hands the loss to the engine, which divides
            if any(loop.flows(z, event) for z in zeros) and any(loop.flows(event, s) for s in steps):
                continue  # zeroed and stepped in the same pass (a GAN critic): nothing accumulates
            unscaled.append(event)
        for event in unscaled:
            twins = [e for e in unscaled if e is not event and _twins(loop, e, event)]
            if any(e.order < event.order for e in twins):
                continue  # one loss, backpropagated in one of two arms (`scaler.scale(loss)` or `loss`): said once
            fix = None if twins else self.fix(_divide_loss, loop, event)  # dividing in one arm would leave the other
            yield Finding(event.span, f"this loss is summed over {factor} micro-batches without division; divide it "
                          f"by {factor}", fix,
                          detail=f"The accumulated gradient (and the effective learning rate) is {factor} times too "
                          f"large; divide the loss by {factor} (or by the window's valid-token count) before backward.")

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
        loss = model(x, y)
        loss.backward()
        if (step + 1) % accum_steps == 0:
            for p in model.parameters():
                p.grad /= accum_steps
            optimizer.step()
            optimizer.zero_grad()
""",
        """\
def train(model, loader, optimizer, accum_steps, num_tokens):
    for step, (x, y) in enumerate(loader):
        loss = model(x, y)
        loss.backward()
        if (step + 1) % accum_steps == 0:
            scale_grads(model, 1 / num_tokens)
            optimizer.step()
            optimizer.zero_grad()
""",
        """\
class GAN:
    def optimize_parameters(self, current_iter):
        for p in self.net_d.parameters():
            p.requires_grad = False
        self.opt_g.zero_grad()
        fake = self.net_g(self.z)
        if current_iter % self.d_iters == 0:
            g_loss = self.cri_gan(self.net_d(fake), True)
            g_loss.backward()
            self.opt_g.step()
        for p in self.net_d.parameters():
            p.requires_grad = True
        self.opt_d.zero_grad()
        d_loss = self.cri_gan(self.net_d(fake.detach()), False)
        d_loss.backward()
        self.opt_d.step()
""",
    )
    INVALID = (
        Invalid("""\
def train(model, teacher, loader, optimizer, accum_steps, lambda_kd):
    for step, (x, y) in enumerate(loader):
        loss = lambda_kd * distill(model(x), teacher(x))
        loss.backward()
        if (step + 1) % accum_steps == 0:
            optimizer.step()
            optimizer.zero_grad()
""", ((4, "GL201"),), fixed="""\
def train(model, teacher, loader, optimizer, accum_steps, lambda_kd):
    for step, (x, y) in enumerate(loader):
        loss = lambda_kd * distill(model(x), teacher(x))
        (loss / accum_steps).backward()
        if (step + 1) % accum_steps == 0:
            optimizer.step()
            optimizer.zero_grad()
"""),
        Invalid("""\
def train(model, loader, optimizer, accum_steps):
    for step, (x, y) in enumerate(loader):
        logits, loss = model(x, y)
        loss.backward()
        if (step + 1) % accum_steps == 0:
            optimizer.step()
            optimizer.zero_grad()
""", ((4, "GL201"),), fixed="""\
def train(model, loader, optimizer, accum_steps):
    for step, (x, y) in enumerate(loader):
        logits, loss = model(x, y)
        (loss / accum_steps).backward()
        if (step + 1) % accum_steps == 0:
            optimizer.step()
            optimizer.zero_grad()
"""),
        Invalid("""\
def train(model, loader, optimizer, accum_steps):
    for step, (x, y) in enumerate(loader):
        loss = model(x, y)
        loss.backward()
        if (step + 1) % accum_steps == 0:
            optimizer.step()
            optimizer.zero_grad()
""", ((4, "GL201"),), fixed="""\
def train(model, loader, optimizer, accum_steps):
    for step, (x, y) in enumerate(loader):
        loss = model(x, y)
        (loss / accum_steps).backward()
        if (step + 1) % accum_steps == 0:
            optimizer.step()
            optimizer.zero_grad()
"""),
        Invalid("""\
def train(model, loader, optimizer, scaler, accum_steps):
    for step, (x, y) in enumerate(loader):
        scaler.scale(model(x, y)).backward()
        if (step + 1) % accum_steps == 0 or step + 1 == len(loader):
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad()
""", ((3, "GL201"),), fixed="""\
def train(model, loader, optimizer, scaler, accum_steps):
    for step, (x, y) in enumerate(loader):
        scaler.scale(model(x, y) / min(accum_steps, len(loader) - step + step % accum_steps)).backward()
        if (step + 1) % accum_steps == 0 or step + 1 == len(loader):
            scaler.step(optimizer)
            scaler.update()
            optimizer.zero_grad()
"""),
    )


def _scales_gradients(loop: TrainingLoop) -> bool:
    """The loop (or a helper it follows) divides the accumulated gradients instead of the loss."""
    units = {id(e.unit): e.unit for e in loop.events if e.unit is not loop.unit}
    return scales_gradients(loop.root) or any(scales_gradients(unit.root) for unit in units.values())


def _twins(loop: TrainingLoop, first: Event, second: Event) -> bool:
    """Two backward calls of one loss (the same name, before AMP scaling, in the same function)
    in the two branches of one ``if`` that assigns nothing to it: one missing 1/N, written
    where the loss is computed, not two."""
    a, b = first.unscaled_loss, second.unscaled_loss
    if a is None or b is None or first.unit is not second.unit or not loop.exclusive(first, second):
        return False
    name = dotted(a)
    if name is None or name != dotted(b):
        return False
    split = next((node for node in reversed(first.ancestors) if isinstance(node, cst.If)
                  and any(node is other for other in second.ancestors)), None)
    return split is not None and not _assigns(split, name)


def _assigns(node: cst.CSTNode, name: str) -> bool:
    """Whether ``node`` binds ``name`` (``name = ...``, ``name += ...``, a tuple target)."""
    targets = [t.target for a in _nodes(node, cst.Assign) for t in a.targets]
    targets += [a.target for a in _nodes(node, cst.AugAssign)] + [a.target for a in _nodes(node, cst.AnnAssign)]
    while any(isinstance(t, (cst.Tuple, cst.List)) for t in targets):
        targets = [e.value for t in targets for e in (t.elements if isinstance(t, (cst.Tuple, cst.List)) else [])] + \
            [t for t in targets if not isinstance(t, (cst.Tuple, cst.List))]
    return any(dotted(t) == name for t in targets)


def _nodes(node: cst.CSTNode, kind: type[N]) -> list[N]:
    found: list[N] = []

    class _Find(cst.CSTVisitor):
        def on_visit(self, inner: cst.CSTNode) -> bool:
            if isinstance(inner, kind):
                found.append(inner)
            return True

    node.visit(_Find())
    return found


def _divide_loss(loop: TrainingLoop, backward: Event) -> Change | None:
    """Divide the loss inside the backward call (inside ``scaler.scale(...)``) by the window's
    size, leaving the logged loss as it was (unsafe: assumes every micro-batch weighs the
    same and, with a final partial window, that the loader has ``len()``). None for a
    backward in a helper: N as the loop writes it need not be in the helper's scope."""
    loss, divisor = backward.unscaled_loss, _window_size(loop)
    if loss is None or divisor is None or backward.unit is not loop.unit:
        return None
    return Change(f"Divide the loss by `{divisor}`", edit.divide(loop, loss, divisor))


def _window_size(loop: TrainingLoop) -> str | None:
    """N, or for a gate that also steps on the epoch's last micro-batch, the size of the
    window the micro-batch is in, when the epoch's length is known."""
    if loop.factor is None:
        return None
    n = edit.operand(loop, loop.factor)
    gate = loop.primary_gate
    if gate is None or not gate.final_branch:
        return n
    if gate.epoch_length is None:
        return n  # GL202 then asks for the window's actual size
    total = edit.operand(loop, gate.epoch_length)
    return f"min({n}, {total} - {gate.counter} + {gate.counter} % {n})"
