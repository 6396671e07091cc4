"""GL304 missing-zero-grad: backward and step every update, but gradients never zeroed."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from gradlint.catalogue import CATALOGUE
from gradlint.model.events import Event, Role, Shape, TrainingLoop, branch_of
from gradlint.model.held_optimizer import held_optimizer
from gradlint.names import Kind
from gradlint.rules.base import Finding, Invalid, Rule
from gradlint.rules.readers import backward_before, call_text, on_engine_path, update_steps


class MissingZeroGrad(Rule):
    info = CATALOGUE["GL304"]

    def check(self, loop: TrainingLoop) -> Iterator[Finding]:
        steps = [s for s in update_steps(loop) if not on_engine_path(loop, s)]
        if not steps or not loop.of(Role.BACKWARD):
            return
        if loop.shape is Shape.FRAMEWORK or _zeroed_by_caller(loop) or loop.calls_zeroing:
            return  # the framework, the module function calling this per-batch function, or a helper zeroes
        unzeroed = [s for s in steps if not _zeroed(loop, s, steps)]
        if not unzeroed:
            return
        if any(name is not None and loop.rebuilds(name) for s in steps for name in (s.receiver, s.target)):
            return  # an optimizer built in each iteration, often over tensors made fresh there too
        step = unzeroed[0]
        yield Finding(step.span, f"{call_text(loop, step)} runs but {_unzeroed(loop, step)}; zero them once per "
                      "update", detail="Each update adds all previous gradients again; call optimizer.zero_grad() "
                      "once per update, after the step.")

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


def _zeroed_by_caller(loop: TrainingLoop) -> bool:
    """A per-batch function that a function of its module calls, and that function zeroes
    gradients itself (``optimizer.zero_grad(); self.train_step(batch)``)."""
    own = loop.unit.unit
    return isinstance(loop.root, cst.FunctionDef) and loop.root is loop.unit.root and (
        own.name in loop.unit.facts.called_by_zeroing)


def _zeroed(loop: TrainingLoop, step: Event, steps: list[Event]) -> bool:
    """Whether a zeroing of the loop may clear the gradients ``step`` applies. One in an
    ``except`` handler the step is not in runs only when the update failed: it does not, nor
    does one in another branch of an ``if`` whose branches are whole updates (see
    :func:`_other_update_path`). An optimizer's ``zero_grad`` clears only its own gradients when that
    optimizer is stepped in the loop too (a GAN's ``opt_d`` is not ``opt_g``); any other
    zeroing (a model's, ``p.grad = None``, an optimizer the loop does not step: perhaps another
    name for this one) may clear every parameter's."""
    stepped = {held_optimizer(s) for s in steps}
    for zero in loop.of(Role.ZERO_GRAD):
        if _on_failure_only(zero, step) or _other_update_path(loop, zero, step):
            continue
        if any(s is not step and zero.inside(s.node) for s in steps):
            continue  # in the closure another step runs (`opt.step(closure)`): it clears for that step only
        held = held_optimizer(zero)
        if zero.kind is not Kind.OPTIMIZER or held not in stepped or held == held_optimizer(step):
            return True
    return step.target is None and bool(loop.of(Role.ZERO_GRAD))  # an unnamed optimizer: any zeroing may be its


def _other_update_path(loop: TrainingLoop, zero: Event, step: Event) -> bool:
    """``zero`` and ``step`` are in different branches of an ``if`` whose branch holding the
    step also holds the backward before it: each branch is an update of its own (``if mode ==
    "vanilla": backward; step`` / ``elif ...: zero_grad; backward; step``), and the other's
    zeroing never runs on this one's path. A branch holding only the step (``if amp:
    scaler.step(opt)`` / ``else: opt.step(); opt.zero_grad()`` after one backward) may share
    its gradients' zeroing with the other: such alternatives are not told apart."""
    backward = backward_before(loop, step)
    if backward is None:
        return False
    for node in step.ancestors:
        if isinstance(node, cst.If) and zero.inside(node):
            side = branch_of(step, node)
            if side is not None and branch_of(zero, node) not in (None, side) and branch_of(backward, node) == side:
                return True
    return False


def _on_failure_only(zero: Event, step: Event) -> bool:
    """``zero`` is in an ``except`` handler that ``step`` is not in, or in a branch of an ``if``
    that leaves without the step (``if not isfinite(norm): opt.zero_grad(); return``): it
    runs only when the update is skipped."""
    for parent, node in zip(zero.ancestors, zero.ancestors[1:], strict=False):
        if isinstance(node, cst.ExceptHandler) and not step.inside(node):
            return True
        if isinstance(parent, (cst.If, cst.Else)) and isinstance(node, cst.IndentedBlock) and (
                not step.inside(node) and _leaves(node)):
            return True
    return False


def _leaves(block: cst.IndentedBlock) -> bool:
    """The block ends by leaving its function or iteration (``return``, ``continue``,
    ``raise``)."""
    last = block.body[-1] if block.body else None
    return isinstance(last, cst.SimpleStatementLine) and any(
        isinstance(s, (cst.Return, cst.Continue, cst.Raise)) for s in last.body)


def _unzeroed(loop: TrainingLoop, step: Event) -> str:
    """What the message says is missing: any zeroing, or one on the step's path."""
    if not loop.of(Role.ZERO_GRAD):
        return "gradients are never zeroed in this loop"
    return f"no zeroing on its path clears {held_optimizer(step)}'s gradients"
