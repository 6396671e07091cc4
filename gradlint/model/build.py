"""Build the training loops of one unit: collect events, pick iteration scopes, find the
update boundary, and place every event in the micro-batch body or at the boundary."""

from __future__ import annotations

import libcst as cst

from gradlint.model.cadence import cadence_names
from gradlint.model.collect import Collector, Resolver
from gradlint.model.events import Event, Gate, Place, Role, Shape, TrainingLoop
from gradlint.model.gate_search import (
    after_guard,
    engine_window,
    epoch_length,
    find_gates,
    iterable_of,
    one_based,
    restarts_each_epoch,
    zero_based,
)
from gradlint.model.gate_tests import is_final_condition, read_gate
from gradlint.model.micro_counts import micro_count
from gradlint.model.scopes import find_scopes, residual_update
from gradlint.model.sync_guards import guards_iterations, is_sync_guard
from gradlint.model.syntax import dotted, names_in
from gradlint.model.unit import UnitModel
from gradlint.model.update_scope import update_scopes
from gradlint.names import Kind

_UNBOUNDED = frozenset({"range", "count", "cycle", "repeat", "itertools.count", "itertools.cycle"})


def build_loops(unit: UnitModel, resolve: Resolver | None = None) -> list[TrainingLoop]:
    """All training loops of ``unit``, with every event placed; ``resolve`` finds the
    training functions of the same module that a call reaches."""
    collector = Collector(unit, resolve)
    events = collector.events
    for order, event in enumerate(events):
        event.order = order
        event.span = event.unit.span(event.node)
    loops = []
    scopes = find_scopes(unit, collector, events)
    for root, micro in scopes:
        loops.append(_place(unit, collector, root, micro, [e for e in events if e.inside(root)]))
    outside = residual_update(unit, collector, scopes, events)
    if outside:
        loops.append(_place(unit, collector, unit.root, [], outside))
    return loops or update_scopes(unit, collector, events)


def _place(
    unit: UnitModel, collector: Collector, root: cst.CSTNode, micro: list[cst.CSTNode], events: list[Event]
) -> TrainingLoop:
    """Decide the shape of one scope and where each of its events runs."""
    accumulate = [w.node for w in collector.withs if _is_accumulate(w.unit, w.node) and _contains(events, w.node)]
    gates = find_gates(collector, root, events, bool(accumulate), micro)
    if accumulate:
        shape = Shape.ACCELERATE
    elif not gates and not micro and _boundary_owned(unit, root):  # a micro-batch loop of its own: its window
        shape = Shape.FRAMEWORK
    elif gates and not all(any(_holds(m, g.node, events) for m in micro) for g in gates):
        shape = Shape.GATED
    elif micro:
        shape = Shape.NESTED
    else:
        shape = Shape.PLAIN
    sync_sites = [w for w in collector.withs if _is_sync_context(w.unit, w.node)] + [
        site for site in collector.loops if guards_iterations(site.unit, site.node)]
    sync_blocks = [site.node for site in sync_sites]
    manages_sync = any(site.node is root or site.inside(root) for site in sync_sites)
    stepping = {id(e) for e in events if _keyword_gated(e, collector)}
    beside = _beside_accumulate(collector, accumulate) + _beside_gates(collector, root, gates)
    for event in events:
        event.place = Place.BOUNDARY if id(event) in stepping and shape is not Shape.PLAIN else (
            _place_of(event, shape, gates, micro))
        if event.place is Place.MICRO and not micro and (
                any(_other_branch(event, node) for node in beside) or _asked_to_step(unit, event, root, events)):
            event.place = Place.EVERY
        event.no_sync = any(event.inside(w) for w in sync_blocks)
    for gate in gates:
        gate.final_branch = gate.final_branch or _flushed_after(collector, root, gate)
        gate.zero_based = zero_based(unit, gate, root, events)
        gate.one_based = gate.offset_one and one_based(unit, gate, root, events)
        gate.epoch_length = epoch_length(unit, gate, root)
        gate.engine_window = engine_window(unit, gate)
        gate.restarts_each_epoch = restarts_each_epoch(unit, gate, root, events)
    gate_nodes = [g.node for g in gates]
    loop = TrainingLoop(root=root, unit=unit, shape=shape, events=events, gates=gates,
                        micro_loops=micro, accumulate_blocks=accumulate,
                        iterates_loader=_iterates_loader(unit, root),
                        tail_guarded=_tail_guarded(unit, collector, root, gate_nodes),
                        per_epoch=_per_epoch(unit, root, events),
                        skips_sync=manages_sync or shape is Shape.FRAMEWORK,  # the framework syncs at its boundary
                        callees=frozenset(name for name, chain in collector.callees if any(a is root for a in chain)))
    loop.factor = _factor(unit, loop)
    if loop.factor is not None:
        for event in events:
            if _without_accumulation(unit, event, root, loop.factor):
                event.place = Place.EVERY
    homes = {id(e.unit): e.unit for e in events} | {id(unit): unit}
    loop.cadence_names = cadence_names(collector.ifs, gate_nodes, loop.factor, homes.values())
    return loop


def _boundary_owned(unit: UnitModel, root: cst.CSTNode) -> bool:
    """Whether ``root`` is a method that a framework calls once per micro-batch and whose update
    boundary it owns (an HF ``Trainer`` subclass's ``training_step``)."""
    own = unit.unit
    return root is unit.root and own.class_name is not None and (own.class_name, own.name) in unit.facts.boundary_owned


def _without_accumulation(unit: UnitModel, event: Event, root: cst.CSTNode, factor: cst.BaseExpression) -> bool:
    """Whether ``event`` runs only when the window is one micro-batch: under
    ``if N == 1:`` (or ``N <= 1``, ``N < 2``, as one ``and`` operand), or in the ``else`` of
    ``if N > 1:`` (``N >= 2``, ``N != 1``)."""
    chain = event.ancestors
    start = next((i for i, node in enumerate(chain) if node is root), len(chain))
    for node in chain[start + 1:]:
        if not isinstance(node, cst.If):
            continue
        if event.inside(node.body) and _says(unit, node.test, factor, single=True, conjunct=True):
            return True
        if node.orelse is not None and event.inside(node.orelse) and _says(unit, node.test, factor, single=False):
            return True
    return False


def _says(unit: UnitModel, test: cst.BaseExpression, factor: cst.BaseExpression, single: bool,
          conjunct: bool = False) -> bool:
    """Whether ``test`` reads ``factor`` is 1 (``single``) or more than 1."""
    if conjunct and isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
        return any(_says(unit, side, factor, single, conjunct) for side in (test.left, test.right))
    if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1):
        return False
    target = test.comparisons[0]
    left, right, op = test.left, target.comparator, target.operator
    text = unit.text_of(factor)
    if unit.text_of(right) == text:
        left, right, op = right, left, _FLIPPED.get(type(op), type(op))()
    elif unit.text_of(left) != text:
        return False
    if not isinstance(right, cst.Integer):
        return False
    value = right.evaluated_value
    reading = {cst.Equal: (value == 1, None), cst.LessThanEqual: (value == 1, None), cst.LessThan: (value == 2, None),
               cst.GreaterThan: (None, value == 1), cst.GreaterThanEqual: (None, value == 2),
               cst.NotEqual: (None, value == 1)}.get(type(op))
    if reading is None:
        return False
    return bool(reading[0] if single else reading[1])


_FLIPPED: dict[type, type] = {cst.LessThan: cst.GreaterThan, cst.GreaterThan: cst.LessThan,
                              cst.LessThanEqual: cst.GreaterThanEqual, cst.GreaterThanEqual: cst.LessThanEqual}


def _asked_to_step(unit: UnitModel, event: Event, root: cst.CSTNode, events: list[Event]) -> bool:
    """Whether ``event`` sits under an ``if`` that holds a step and whose test is a call the
    model cannot read (``if self._should_do_step():``, ``do_step = should_step(); if do_step:``):
    how often that branch runs is decided elsewhere."""
    chain = event.ancestors
    start = next((i for i, node in enumerate(chain) if node is root), len(chain))
    for node in chain[start + 1:]:
        if not isinstance(node, cst.If) or not event.inside(node.body):
            continue
        test = node.test
        name = dotted(test)
        if name is not None:  # the flag is the loop's when the event lives in a helper
            test = event.unit.single_value(name) or unit.single_value(name) or test
        if isinstance(test, cst.Call) and any(
                e.role is Role.STEP and not e.closure and e.inside(node.body) for e in events):
            return True
    return False


def _beside_accumulate(collector: Collector, blocks: list[cst.With]) -> list[tuple[cst.If, int]]:
    """Each ``if`` with an ``accelerator.accumulate()`` block in one branch, and which branch
    (0 the body, 1 the ``else``)."""
    found: list[tuple[cst.If, int]] = []
    for site in collector.withs:
        if not any(site.node is b for b in blocks):
            continue
        for node in site.ancestors:
            if isinstance(node, cst.If):
                side = 0 if any(a is node.body for a in site.ancestors) else 1
                found.append((node, side))
    return found


def _beside_gates(collector: Collector, root: cst.CSTNode, gates: list[Gate]) -> list[tuple[cst.If, int]]:
    """Each ``if`` inside ``root`` with a gate in one branch, and which branch: the other
    branch is a path that never reaches the gate (``if separately: ...gated... else:
    batch_update()``). Gates that step decide this; a window-opening ``if n == 0: zero_grad()``
    reached from both branches does not."""
    stepping = [g for g in gates if any(
        e.role is Role.STEP and not e.closure and e.inside(g.node) for e in collector.events)]
    found: list[tuple[cst.If, int]] = []
    for site in collector.ifs:
        if not any(site.node is g.node for g in stepping or gates):
            continue
        chain = site.ancestors
        start = next((i for i, node in enumerate(chain) if node is root), len(chain))
        for node in chain[start + 1:]:
            if isinstance(node, cst.If):
                found.append((node, 0 if any(a is node.body for a in chain) else 1))
    both = [node for node, side in found if (node, 1 - side) in found]
    return [(node, side) for node, side in found if not any(node is b for b in both)]


def _other_branch(event: Event, beside: tuple[cst.If, int]) -> bool:
    """Whether ``event`` sits in the branch of the ``if`` without the ``accumulate()`` block:
    a hand-written path whose cadence Accelerate does not decide (and the model cannot tell)."""
    node, side = beside
    if side == 0:
        return node.orelse is not None and event.inside(node.orelse)
    return event.inside(node.body)


def _flushed_after(collector: Collector, root: cst.CSTNode, gate: Gate) -> bool:
    """Whether the partial window left at the end of the loop is stepped right after it: a
    step after the loop in the same block, unconditional or under a test of the gate's
    counter or N (``if n_acc > 0:``, ``if (step + 1) % N != 0:``)."""
    site = next((s for s in collector.loops if s.node is root), None)
    block = site.ancestors[-1] if site is not None and site.ancestors else None
    if not isinstance(block, cst.IndentedBlock):
        return False
    body = list(block.body)
    position = next((i for i, stmt in enumerate(body) if stmt is root), None)
    if position is None:
        return False
    names = {gate.counter} | (names_in(gate.modulus) if gate.modulus is not None else set()) | (
        names_in(gate.count_bound) if gate.count_bound is not None else set())
    names.discard(None)
    for event in collector.events:
        if event.role is not Role.STEP or event.closure or not event.inside(block) or event.inside(root):
            continue
        chain = event.ancestors
        index = next(i for i, node in enumerate(chain) if node is block)
        top = chain[index + 1] if index + 1 < len(chain) else event.statement
        later = next((i for i, stmt in enumerate(body) if stmt is top), -1) > position
        if later and (isinstance(top, cst.SimpleStatementLine)
                      or (isinstance(top, cst.If) and event.inside(top.body) and names & names_in(top.test))):
            return True
    return False


def _is_sync_context(unit: UnitModel, with_node: cst.With) -> bool:
    """A sync guard (:func:`gradlint.model.sync_guards.is_sync_guard`), ``accelerator.accumulate``,
    or a context variable bound to one."""
    for item in with_node.items:
        expr = item.item
        if is_sync_guard(unit, expr):
            return True
        if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute) and expr.func.attr.value == "accumulate":
            return True
        name = dotted(expr.func if isinstance(expr, cst.Call) else expr)
        if name and any("accumulate" in unit.text_of(value) for value in unit.bound_values(name)):
            return True
    return False


def _per_epoch(unit: UnitModel, root: cst.CSTNode, events: list[Event]) -> bool:
    """Whether the loop is one epoch of several: nested in another loop, or the body of a
    ``train_one_epoch``-style function or of one the project calls from an epoch loop."""
    own = unit.unit
    if "epoch" in own.name.lower() or (root is not unit.root and (own.class_name, own.name) in unit.facts.per_epoch_units):
        return True
    for event in events:
        chain = event.ancestors[: next(i for i, a in enumerate(event.ancestors) if a is root)]
        return any(isinstance(a, (cst.For, cst.While)) for a in chain)
    return False


def _tail_guarded(unit: UnitModel, collector: Collector, root: cst.CSTNode, gate_nodes: list[cst.If]) -> bool:
    """An ``if <past the last full window>: continue`` (or ``break``) before the backward
    that skips the epoch's tail: no window is ever short (ConvNeXt's
    ``if step >= num_training_steps_per_epoch: continue``)."""
    backward_lines = [_line_in(unit, e) for e in collector.events if e.role is Role.BACKWARD and e.inside(root)]
    for site in collector.ifs:
        node, owner = site.node, site.unit
        if any(node is g for g in gate_nodes) or not site.inside(root):
            continue
        if not backward_lines or owner.span(node).line > min(backward_lines):
            continue  # a guard after the backward (`if step == max_steps: break`) skips nothing
        last = node.body.body[-1] if node.body.body else None
        leaves = isinstance(last, cst.SimpleStatementLine) and isinstance(last.body[-1], (cst.Continue, cst.Break))
        if leaves and is_final_condition(node.test, owner.text_of):
            return True
    return False


def _line_in(unit: UnitModel, event: Event) -> int:
    """Where ``event`` happens in ``unit``: its own line, or the line of the call that
    reaches the helper it lives in."""
    if event.unit is unit:
        return event.span.line
    anchor = next(a for a in reversed(event.ancestors) if a in unit.positions)
    return unit.span(anchor).line


def _iterates_loader(unit: UnitModel, root: cst.CSTNode) -> bool:
    """A ``for`` over a finite data loader (not ``range``/``count``), or a ``while`` that
    drains one (``while i < len(loader)``, ``next(it)`` until ``StopIteration``)."""
    if isinstance(root, cst.While):
        return "len(" in unit.text_of(root.test) or "StopIteration" in unit.text_of(root.body)
    if not isinstance(root, cst.For):
        return False
    source = iterable_of(unit, root)
    while isinstance(source, cst.Call) and dotted(source.func) in ("enumerate", "zip"):
        if not source.args:
            return False
        source = source.args[0].value
    if isinstance(source, cst.Call):
        return dotted(source.func) not in _UNBOUNDED or _slices_a_dataset(source)
    return True


def _slices_a_dataset(source: cst.Call) -> bool:
    """``range(0, n, batch_size)``: one pass over a data set in minibatch slices (a step other
    than 1), not a count of steps."""
    args = [a.value for a in source.args if a.keyword is None and not a.star]
    return dotted(source.func) == "range" and len(args) == 3 and not (
        isinstance(args[2], cst.Integer) and args[2].evaluated_value == 1)


def _keyword_gated(event: Event, collector: Collector) -> bool:
    """A fused call that steps only when its keyword test (``update_grad=(i + 1) % N == 0``)
    reads as an update gate."""
    gated_by = event.record.gated_by
    if gated_by is None:
        return False
    owner, loop_unit = event.unit, collector.home
    test = read_gate(gated_by, lambda n: owner.single_value(n) or loop_unit.single_value(n),
                     collector.counters, owner.text_of)
    return test is not None and test.update_when


def _place_of(event: Event, shape: Shape, gates: list[Gate], micro: list[cst.CSTNode]) -> Place:
    for gate in gates:
        if gate.guard:
            if after_guard(event, gate):
                return Place.BOUNDARY
        elif gate.update_branch is not None and event.inside(gate.update_branch) or _under_gate_test(event, gate):
            return Place.BOUNDARY
    if any(event.inside(loop) for loop in micro):
        return Place.MICRO
    if shape is Shape.PLAIN:
        return Place.EVERY
    if shape is Shape.NESTED:
        return Place.BOUNDARY
    return Place.MICRO


def _under_gate_test(event: Event, gate: Gate) -> bool:
    """An ``if`` beside the gate whose test has the gate's own update test as an ``and`` operand
    (torchdistill's ``if sched and count % S == 0 and count % N == 0:``): it runs only at the
    boundary too."""
    node = gate.node
    if not isinstance(node, cst.If) or gate.update_branch is not node.body:
        return False
    wanted = _bare(node.test)
    return any(isinstance(a, cst.If) and a is not node and event.inside(a.body)
               and any(_bare(c).deep_equals(wanted) for c in _conjuncts(a.test)) for a in event.ancestors)


def _conjuncts(test: cst.BaseExpression) -> list[cst.BaseExpression]:
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
        return _conjuncts(test.left) + _conjuncts(test.right)
    return [test]


def _bare(expr: cst.BaseExpression) -> cst.BaseExpression:
    """``expr`` without its own parentheses."""
    return expr.with_changes(lpar=[], rpar=[]) if getattr(expr, "lpar", None) else expr


def _holds(loop: cst.CSTNode, node: cst.CSTNode, events: list[Event]) -> bool:
    """Whether the ``if`` ``node`` (holding some event) sits inside ``loop``."""
    return any(e.inside(node) and e.inside(loop) for e in events)


def _contains(events: list[Event], node: cst.CSTNode) -> bool:
    return any(e.inside(node) for e in events)


def _is_accumulate(unit: UnitModel, with_node: cst.With) -> bool:
    for item in with_node.items:
        call = item.item
        if isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute):
            if call.func.attr.value == "accumulate" and unit.facts.kind_of(dotted(call.func.value)) is Kind.ACCELERATOR:
                return True
    return False


def _factor(unit: UnitModel, loop: TrainingLoop) -> cst.BaseExpression | None:
    gate = loop.primary_gate
    if gate is not None:
        return gate.modulus if gate.modulus is not None else gate.count_bound
    counts = [micro_count(micro) for micro in loop.micro_loops]
    return next((n for n in counts if n is not None), None)
