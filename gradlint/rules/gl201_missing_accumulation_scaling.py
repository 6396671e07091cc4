"""GL201 missing-accumulation-scaling: the loss of a window is not divided by N."""

from __future__ import annotations

from collections.abc import Iterator

from gradlint.catalogue import CATALOGUE
from gradlint.fixes import primitives as edit
from gradlint.model.events import Event, Role, Shape, TrainingLoop
from gradlint.model.loss import Scaling, scales_gradients
from gradlint.model.loss_arms import UnscaledArm, unscaled_arm
from gradlint.rules.base import Change, Finding, Invalid, Rule
from gradlint.rules.readers import deepspeed_divisor, per_micro_batch


class MissingAccumulationScaling(Rule):
    info = CATALOGUE["GL201"]

    def check(self, loop: TrainingLoop) -> Iterator[Finding]:
        factor = loop.factor_code()
        if factor is None or loop.shape is Shape.ACCELERATE or _scales_gradients(loop):
            return
        steps, zeros = per_micro_batch(loop, Role.STEP), per_micro_batch(loop, Role.ZERO_GRAD)
        for event in per_micro_batch(loop, Role.BACKWARD):
            if event.framework_divides:
                continue
            scaling = event.loss_trace.scaling
            arm = unscaled_arm(event.unit, event.unscaled_loss, event.span.line, factor) \
                if scaling is Scaling.SCALED else None
            if scaling is not Scaling.UNSCALED and arm is None:
                continue
            if event.framework == "accelerate" and loop.factor is not None and deepspeed_divisor(loop.unit, loop.factor):
                continue  # N is DeepSpeed's: accelerator.backward hands the loss to the engine, which divides
            if any(loop.flows(z, event) for z in zeros) and any(loop.flows(event, s) for s in steps):
                continue  # zeroed and stepped in the same pass (a GAN critic): nothing accumulates
            if arm is not None:
                where = event.unit.span(arm.value).line
                yield Finding(event.span, f"this loss is not divided by {factor} on the branch of line {where}; "
                              "divide it there too", self.fix(_divide_arm, loop, arm),
                              detail=f"One arm of the `if` divides the loss by {factor} and the other does not: the "
                              f"micro-batches of that branch weigh {factor} times too much in the accumulated gradient.")
                continue
            yield Finding(event.span, f"this loss is summed over {factor} micro-batches without division; divide it "
                          f"by {factor}", self.fix(_divide_loss, loop, event),
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
        """\
def train(model, loader, optimizer, accum_steps):
    for step, (x, y) in enumerate(loader):
        if accum_steps > 1:
            loss = model(x, y) / accum_steps
        else:
            loss = model(x, y)
        loss.backward()
        if (step + 1) % accum_steps == 0:
            optimizer.step()
            optimizer.zero_grad()
""",
        """\
def train(model, loader, optimizer, accum_steps, use_deepspeed):
    for step, (x, y) in enumerate(loader):
        if use_deepspeed:
            loss = model(x, y)
        else:
            loss = model(x, y) / accum_steps
        loss.backward()
        if (step + 1) % accum_steps == 0:
            optimizer.step()
            optimizer.zero_grad()
""",
        """\
def train(model, loader, optimizer, accum_steps):
    for step, x in enumerate(loader):
        if isinstance(x, tuple):
            loss = model(*x) / accum_steps
        else:
            loss = model(**x)
            loss = loss / accum_steps
        loss.backward()
        if (step + 1) % accum_steps == 0:
            optimizer.step()
            optimizer.zero_grad()
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
        Invalid("""\
def train(model, loader, optimizer, accum_steps):
    for step, x in enumerate(loader):
        if isinstance(x, tuple):
            loss = model(*x).mean() / accum_steps
        else:
            loss = model(**x).mean()
        loss.backward()
        if (step + 1) % accum_steps == 0:
            optimizer.step()
            optimizer.zero_grad()
""", ((7, "GL201"),), fixed="""\
def train(model, loader, optimizer, accum_steps):
    for step, x in enumerate(loader):
        if isinstance(x, tuple):
            loss = model(*x).mean() / accum_steps
        else:
            loss = model(**x).mean() / accum_steps
        loss.backward()
        if (step + 1) % accum_steps == 0:
            optimizer.step()
            optimizer.zero_grad()
"""),
        Invalid("""\
class Trainer:
    def train(self):
        self.opt.zero_grad()
        for _ in accumulate_contexts(self.accumulate_every, self.ddps):
            real, fake = self.D(next(self.loader)), self.D(self.G(self.noise()))
            loss = hinge(real, fake)
            loss = loss + self.aux_weight * self.D.aux_loss()
            grads = torch_grad(real, self.images)
            loss = loss + 10 * (grads.norm(2, dim=1) ** 2).mean()
            loss = loss + self.D.q_loss()
            loss = loss + self.D.reg_loss()
            loss.backward()
        self.opt.step()
""", ((12, "GL201"),), fixed="""\
class Trainer:
    def train(self):
        self.opt.zero_grad()
        for _ in accumulate_contexts(self.accumulate_every, self.ddps):
            real, fake = self.D(next(self.loader)), self.D(self.G(self.noise()))
            loss = hinge(real, fake)
            loss = loss + self.aux_weight * self.D.aux_loss()
            grads = torch_grad(real, self.images)
            loss = loss + 10 * (grads.norm(2, dim=1) ** 2).mean()
            loss = loss + self.D.q_loss()
            loss = loss + self.D.reg_loss()
            (loss / self.accumulate_every).backward()
        self.opt.step()
"""),
    )


def _scales_gradients(loop: TrainingLoop) -> bool:
    """The loop (or a helper it follows) divides the accumulated gradients instead of the loss."""
    units = {id(e.unit): e.unit for e in loop.events if e.unit is not loop.unit}
    return scales_gradients(loop.root) or any(scales_gradients(unit.root) for unit in units.values())


def _divide_loss(loop: TrainingLoop, backward: Event) -> Change | None:
    """Divide the loss inside the backward call (inside ``scaler.scale(...)``) by the window's
    size, leaving the logged loss as it was (unsafe: assumes every micro-batch weighs the
    same and, with a final partial window, that the loader has ``len()``). None for a
    backward in a helper: N as the loop writes it need not be in the helper's scope."""
    loss, divisor = backward.unscaled_loss, _window_size(loop)
    if loss is None or divisor is None or backward.unit is not loop.unit:
        return None
    return Change(f"Divide the loss by `{divisor}`", edit.divide(loop, loss, divisor))


def _divide_arm(loop: TrainingLoop, arm: UnscaledArm) -> Change | None:
    """Divide the unscaled arm's loss by what the other arm divides by (unsafe, as above)."""
    divisor = edit.operand(loop, arm.divisor)
    return Change(f"Divide this branch's loss by `{divisor}`", edit.divide(loop, arm.value, divisor))


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
