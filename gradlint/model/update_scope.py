"""Update scopes: functions that perform the update but run no backward themselves.

``OptimizerWrapper.step``, ``Trainer.update``, ``step_optimizer``, a ``_train_op`` closure
handed to the user: they clip, step the optimizer, advance the scheduler and zero the
gradients, while the backward runs in their caller. They form no training loop (a loop needs a
backward and a step), yet the order of the update inside them needs no window to read:

- a clip after the step of the same update (GL301),
- a scheduler stepped before its optimizer in the same call (GL302),
- a zeroing before the step with nothing in between that could fill the gradients again
  (GL305): see :func:`refills_between`.

An update scope is such a function (or its innermost loop that steps: ``for _ in
range(k): closure(); opt.step()``) when no training loop of its module reaches it: a loop that
calls it reads its events in their context, with its backward. Only the rules whose
``reads_update_scopes`` is set run on it; those that need a window, a backward or the callers
(GL304: no zeroing on the update path) say nothing.
"""

from __future__ import annotations

import libcst as cst
from libcst.metadata import CodePosition

from gradlint.model.calls import classify
from gradlint.model.collect import Collector
from gradlint.model.events import Event, Role, Shape, TrainingLoop
from gradlint.model.preorder import preorder
from gradlint.model.unit import UnitModel

_CLEARS = frozenset({Role.CLIP, Role.UNSCALE, Role.SCHEDULER_STEP, Role.ZERO_GRAD, Role.SCALER_UPDATE, Role.STEP,
                     Role.COUNTER})
"""Roles of calls that neither backpropagate nor write gradients: a zeroing followed only by these
before the step leaves the step zero gradients."""


def update_scopes(unit: UnitModel, collector: Collector, events: list[Event]) -> list[TrainingLoop]:
    """The update scopes of a function ``unit`` whose events (its own and its followed helpers')
    step an optimizer it owns (not a DeepSpeed engine's) and hold no backward."""
    if not isinstance(unit.root, cst.FunctionDef) or any(e.role is Role.BACKWARD for e in events):
        return []
    steps = [e for e in events if e.role is Role.STEP and not e.engine_owned]
    if not steps:
        return []
    scopes = []
    for root in _roots(unit, collector, steps):
        inside = [e for e in events if e.inside(root)]
        scopes.append(TrainingLoop(
            root=root, unit=unit, shape=Shape.PLAIN, events=inside, update_only=True,
            callees=frozenset(name for name, chain in collector.callees if any(a is root for a in chain))))
    return scopes


def _roots(unit: UnitModel, collector: Collector, steps: list[Event]) -> list[cst.CSTNode]:
    """The innermost loops of ``unit``'s own body that hold a step, each a scope; the function
    itself when no loop of its own does."""
    own = [site for site in collector.loops if site.unit is unit and any(s.inside(site.node) for s in steps)]
    innermost: list[cst.CSTNode] = [site.node for site in own if not any(other.inside(site.node) for other in own)]
    return innermost or [unit.root]


def reached(scope: TrainingLoop, loops: list[TrainingLoop]) -> bool:
    """Whether a training loop of ``loops`` (not an update scope) reads the events of
    ``scope``'s function: a loop that calls it, with its backward."""
    return any(not loop.update_only and any(e.unit is scope.unit for e in loop.events) for loop in loops)


def refills_between(loop: TrainingLoop, zero: Event, step: Event) -> bool:
    """Whether anything between ``zero`` and ``step`` may fill the gradients again: a call with
    no role that clears nothing of them (a closure or helper that backpropagates,
    ``apply_grad(model, grads)``, ``torch.autograd.grad``), an assignment to a ``.grad``, or a
    ``yield``/``await`` that hands control to the caller. An event of a followed helper counts
    as such a call. ``zero`` is written in the scope's own function; ``step`` there too, or in a
    helper the function calls after ``zero`` (``step_fn()`` running a local ``def step_fn():
    scaler.step(optimizer)``): then nothing may refill before that call, nor in each helper on
    the way before the call it makes next. Functions defined in the scope run elsewhere, and a
    clearing call's arguments (``model.parameters()``) are read for it."""
    unit = loop.unit
    if zero.unit is not unit:
        return True
    if step.unit is unit:
        return _refills(unit, loop.root, unit.positions[zero.node].end, unit.positions[step.node].start)
    if not step.callers or step.callers[0][1] is not unit:
        return True
    calls = [call for call, _ in step.callers]
    if _refills(unit, loop.root, unit.positions[zero.node].end, unit.positions[calls[0]].start):
        return True
    helpers = [helper for _, helper in step.callers[1:]] + [step.unit]
    for helper, stop in zip(helpers, [*calls[1:], step.node], strict=True):
        root = helper.root
        body = root.body if isinstance(root, cst.FunctionDef) else root
        if _refills(helper, root, helper.positions[body].start, helper.positions[stop].start):
            return True
    return False


def _refills(unit: UnitModel, root: cst.CSTNode, after: CodePosition, before: CodePosition) -> bool:
    """Whether a node of ``root`` (in ``unit``) from ``after`` up to ``before`` may fill the
    gradients again (see :func:`refills_between`)."""
    start, end = (after.line, after.column), (before.line, before.column)

    def between(node: cst.CSTNode) -> bool:
        rng = unit.positions.get(node)
        return rng is not None and start <= (rng.start.line, rng.start.column) and (
            rng.end.line, rng.end.column) <= end

    def skip(node: cst.CSTNode) -> bool:
        if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)) and node is not unit.root:
            return True
        return isinstance(node, cst.Call) and between(node) and any(
            r.role in _CLEARS for r in classify(node, unit.facts))

    return any(between(node) and (isinstance(node, (cst.Call, cst.Yield, cst.Await)) or (
        isinstance(node, (cst.Assign, cst.AugAssign, cst.AnnAssign)) and _writes_grad(node)))
        for _, node in preorder(root).pruned(skip))


def _writes_grad(node: cst.Assign | cst.AugAssign | cst.AnnAssign) -> bool:
    """An assignment of gradients to a ``.grad`` attribute (``p.grad = g``, ``p.grad += g``;
    not ``p.grad = None``)."""
    targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
    cleared = isinstance(node.value, cst.Name) and node.value.value == "None"
    return not cleared and any(isinstance(t, cst.Attribute) and t.attr.value == "grad" for t in targets)
