"""GL304 missing-zero-grad: backward and step every update, but gradients never zeroed."""

from __future__ import annotations

from collections.abc import Iterator

from gradlint.catalogue import CATALOGUE
from gradlint.model.events import Role, Shape, TrainingLoop
from gradlint.rules.base import Finding, Invalid, Rule
from gradlint.rules.readers import call_text, on_engine_path, update_steps


class MissingZeroGrad(Rule):
    info = CATALOGUE["GL304"]

    def check(self, loop: TrainingLoop) -> Iterator[Finding]:
        steps = [s for s in update_steps(loop) if not on_engine_path(loop, s)]
        if not steps or not loop.of(Role.BACKWARD) or loop.of(Role.ZERO_GRAD):
            return
        if loop.shape in (Shape.PLAIN, Shape.FRAMEWORK) and loop.root is loop.unit.root:
            return  # a per-batch function: the caller (or the framework) may zero the gradients
        if loop.calls_zeroing:
            return
        if any(name is not None and loop.reassigns(name) for s in steps for name in (s.receiver, s.target)):
            return  # an optimizer built in each iteration, often over tensors made fresh there too
        yield Finding(steps[0].span, f"{call_text(loop, steps[0])} runs but gradients are never zeroed in this "
                      "loop; zero them once per update", detail="Each update adds all previous gradients again; "
                      "call optimizer.zero_grad() once per update, after the step.")

    VALID = (
        """\
def train(model, loader, optimizer):
    for x, y in loader:
        model(x, y).backward()
        optimizer.step()
        optimizer.zero_grad()
""",
        """\
def train(model, loader, optimizer):
    for x, y in loader:
        model(x, y).backward()
        optimizer.step()
        zero_all_grads(model)
""",
        """\
def steer(latents, steps, lr):
    for t in steps:
        x = latents.detach().clone().requires_grad_(True)
        opt = torch.optim.SGD([x], lr=lr)
        energy(x, t).backward()
        opt.step()
        latents = x.detach()
""",
    )
    INVALID = (
        Invalid("""\
def train(model, loader, optimizer):
    for x, y in loader:
        model(x, y).backward()
        optimizer.step()
""", ((4, "GL304"),)),
    )
