"""Pick a unit's iteration scopes: which loop (or per-batch function) is the training
loop, and which inner loops are its micro-batch loops."""

from __future__ import annotations

import re

import libcst as cst

from gradlint.model.collect import LOOPS, Collector
from gradlint.model.events import Event, Role
from gradlint.model.loss import scales_gradients
from gradlint.model.syntax import dotted
from gradlint.model.unit import UnitModel
from gradlint.names import Kind

_MICRO_HEADER = re.compile(r"micro|accum|grad_acc|n_acc|acc_steps", re.I)
_CHUNKING = frozenset({"chunk", "split", "tensor_split"})


def _has(events: list[Event], node: cst.CSTNode, role: Role) -> bool:
    return any(e.role is role and e.inside(node) and not e.closure for e in events)


def find_scopes(unit: UnitModel, collector: Collector, events: list[Event]) -> list[tuple[cst.CSTNode, list]]:
    """Pick iteration scopes: the innermost loop with both backward and step, else the
    per-batch function; a loop that looks like a micro-batch loop promotes to its parent.
    A complete training loop inside a called helper is that helper's own scope, and the
    caller's loops around it are not training loops (``fit`` calling ``train_epoch``)."""
    loops: list[cst.CSTNode] = [site.node for site in collector.loops]
    own = {id(site.node) for site in collector.loops if site.unit is unit} | {id(unit.root)}
    both = [loop for loop in loops if _has(events, loop, Role.BACKWARD) and _has(events, loop, Role.STEP)]
    innermost = [loop for loop in both if not any(o is not loop and _encloses(loop, o, events) for o in both)]
    scopes: list[tuple[cst.CSTNode, list]] = []
    for loop in innermost:
        parent = _parent_loop(loop, loops, events)
        if parent is not None and _repeats_inside_window(loop, parent, events):
            root, micro = parent, [m for m in _micro_loops(parent, loops, events) if m is not loop]
        elif (parent is not None or isinstance(unit.root, cst.FunctionDef)) and (
                _is_micro_header(unit, loop) or _window_opened_around(loop, parent or unit.root, events)):
            root, micro = (parent if parent is not None else unit.root), [loop]
        else:
            root, micro = loop, _micro_loops(loop, loops, events)
        if id(root) in own:
            scopes.append((root, micro))
    function = unit.root
    if isinstance(function, cst.FunctionDef) and not innermost:
        if _has(events, function, Role.BACKWARD) and _has(events, function, Role.STEP):
            scopes.append((function, _micro_loops(function, loops, events)))
    return scopes


def residual_update(unit: UnitModel, collector: Collector, scopes: list[tuple[cst.CSTNode, list]],
                    events: list[Event]) -> list[Event]:
    """The events of a per-batch function that lie outside its training loops and outside the
    complete training loops of the helpers it calls, when they hold an update of their own (a
    backward and a step: a GAN's generator update after the loop of discriminator steps; one
    gradient step whose recovery path calls a helper that re-runs a warm-up loop); empty
    otherwise. The function is then a scope for these events."""
    if not isinstance(unit.root, cst.FunctionDef):
        return []
    updates = [root for root, _ in scopes] + [
        site.node for site in collector.loops
        if site.unit is not unit and _has(events, site.node, Role.BACKWARD) and _has(events, site.node, Role.STEP)]
    if not updates:
        return []
    outside = [e for e in events if e.inside(unit.root) and not any(e.inside(root) for root in updates)]
    if _has(outside, unit.root, Role.BACKWARD) and _has(outside, unit.root, Role.STEP):
        return outside
    return []


def _repeats_inside_window(loop: cst.CSTNode, parent: cst.CSTNode, events: list[Event]) -> bool:
    """Whether ``loop`` (backward and step on each turn) is a repeat inside the micro-batch body
    of ``parent``: ``parent`` backpropagates outside ``loop`` and steps, outside it and under an
    ``if``, an optimizer that ``loop`` steps too (a high-loss batch re-run and stepped inside a
    counted window). ``parent`` is the training loop; ``loop``'s updates run mid-window."""
    outer = [e for e in events if e.inside(parent) and not e.inside(loop) and not e.closure]
    if not any(e.role is Role.BACKWARD for e in outer):
        return False
    inner = {e.target or e.receiver for e in events if e.role is Role.STEP and e.inside(loop) and not e.closure}
    inner.discard(None)
    return any(e.role is Role.STEP and (e.target or e.receiver) in inner and _under_if(e, parent) for e in outer)


def _window_opened_around(loop: cst.CSTNode, scope: cst.CSTNode, events: list[Event]) -> bool:
    """Whether ``loop`` (backward and step on each turn) runs inside a window that ``scope`` (its
    enclosing loop, or the function) opens and closes: ``loop`` never zeroes gradients, ``scope``
    zeroes those ``loop`` steps outside it (not in a loop of its own), and finishes an update
    outside it too (a clip, an unscale, a scaler update, a scheduler step, or a scaling of the
    accumulated gradients after ``loop``). ``loop``'s turns are the window's micro-batches
    (``opt.zero_grad()``, ``for task in tasks: loss.backward()``, ``p.grad /= n``); a step inside
    ``loop`` runs on every micro-batch. A zeroing before a plain loop with no such close is a
    loop that never zeroes (GL304), not a window."""
    inner = [e for e in events if e.inside(loop) and not e.closure]
    if any(e.role is Role.ZERO_GRAD for e in inner):
        return False
    stepped = {e.target for e in inner if e.role is Role.STEP}
    outer = [e for e in events if e.inside(scope) and not e.inside(loop) and not e.closure]
    opens = any(e.role is Role.ZERO_GRAD and (e.kind is not Kind.OPTIMIZER or e.receiver in stepped)
                and not any(isinstance(a, (*LOOPS, cst.ExceptHandler)) for a in e.ancestors[_index(e, scope) + 1:])
                for e in outer)
    return opens and (any(e.role in _CLOSING for e in outer) or _scales_after(loop, scope, inner))


_CLOSING = frozenset({Role.CLIP, Role.UNSCALE, Role.SCALER_UPDATE, Role.SCHEDULER_STEP})


def _scales_after(loop: cst.CSTNode, scope: cst.CSTNode, inner: list[Event]) -> bool:
    """Whether a statement of ``scope``'s own block after the one holding ``loop`` (and the
    events ``inner`` of it) scales the accumulated gradients (``for p in ps: p.grad.mul_(1 / n)``)."""
    body = getattr(scope, "body", None)
    statements = list(getattr(body, "body", ()))
    chain = inner[0].ancestors if inner else ()
    holder = next((i for i, stmt in enumerate(statements) if any(a is stmt for a in chain)), None)
    return holder is not None and any(scales_gradients(stmt) for stmt in statements[holder + 1:])


def _under_if(event: Event, root: cst.CSTNode) -> bool:
    """Whether an ``if`` inside ``root`` encloses ``event``."""
    return any(isinstance(a, cst.If) for a in event.ancestors[_index(event, root) + 1:])


def _encloses(outer: cst.CSTNode, inner: cst.CSTNode, events: list[Event]) -> bool:
    """Whether ``outer`` contains ``inner`` (judged through the events' ancestor chains)."""
    return any(e.inside(inner) and e.inside(outer) and _index(e, outer) < _index(e, inner) for e in events)


def _index(event: Event, node: cst.CSTNode) -> int:
    return next(i for i, a in enumerate(event.ancestors) if a is node)


def _parent_loop(loop: cst.CSTNode, loops: list[cst.CSTNode], events: list[Event]) -> cst.CSTNode | None:
    for event in events:
        if event.inside(loop):
            chain = event.ancestors[: _index(event, loop)]
            parents = [a for a in chain if isinstance(a, LOOPS)]
            return parents[-1] if parents else None
    return None


def _micro_loops(root: cst.CSTNode, loops: list[cst.CSTNode], events: list[Event]) -> list[cst.CSTNode]:
    """The outermost loops strictly inside ``root`` that hold a backward call."""
    found: list[cst.CSTNode] = []
    for event in events:
        if event.role is not Role.BACKWARD or not event.inside(root):
            continue
        chain = event.ancestors[_index(event, root) + 1 :] if root in event.ancestors else event.ancestors
        inner = next((a for a in chain if isinstance(a, LOOPS)), None)
        if inner is not None and not any(inner is f for f in found):
            found.append(inner)
    return found


def _is_micro_header(unit: UnitModel, loop: cst.CSTNode) -> bool:
    """``for micro_step in ...``, ``for _ in range(accum_steps)``, ``for mb in micro_batches``,
    ``for _ in accumulate_contexts(...)``."""
    if not isinstance(loop, cst.For):
        return False
    if _MICRO_HEADER.search(unit.text_of(loop.target)):
        return True
    source = loop.iter
    if isinstance(source, cst.Call) and dotted(source.func) == "range" and len(source.args) == 1:
        source = source.args[0].value
    name = dotted(source)
    if name is not None and _MICRO_HEADER.search(name):
        return True
    if isinstance(source, cst.Call) and _MICRO_HEADER.search((dotted(source.func) or "").rsplit(".", 1)[-1]):
        return True  # a generator of the window's micro-batches: `for _ in gradient_accumulate_contexts(N, ...)`
    if isinstance(source, cst.Call) and dotted(source.func) in ("zip", "enumerate") and source.args:
        return all(_is_chunks(unit, arg.value) for arg in source.args if arg.keyword is None)
    return _is_chunks(unit, source)


def _is_chunks(unit: UnitModel, expr: cst.BaseExpression) -> bool:
    """``x.chunk(n)``, ``torch.split(x, n)`` or ``x.tensor_split(n)``, directly or through a
    name assigned once (``xs = x.chunk(4)``)."""
    name = dotted(expr)
    if name is not None:
        expr = unit.single_value(name) or expr
    if not isinstance(expr, cst.Call):
        return False
    func = dotted(expr.func) or ""
    return func.rsplit(".", 1)[-1] in _CHUNKING
