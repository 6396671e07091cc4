"""Find the update boundary of a scope: the ``if`` statements that gate the update, and
what their counters are."""

from __future__ import annotations

import libcst as cst

from gradlint.diagnostics import Span
from gradlint.model.collect import Collector, Site
from gradlint.model.events import UPDATE_ROLES, Event, Gate, Role, TrainingLoop
from gradlint.model.gate_tests import GateTest, Lookup, read_gate, read_last_micro_batch
from gradlint.model.optim_wrappers import wrapper_gate
from gradlint.model.syntax import dotted, names_in
from gradlint.model.unit import UnitModel

_ZERO_BASED_PARAMS = frozenset({"batch_idx", "batch_nb", "batch_index", "batch_num", "idx"})


def find_gates(collector: Collector, root: cst.CSTNode, events: list[Event], accelerate: bool,
               micro: list[cst.CSTNode] | None = None) -> list[Gate]:
    """The ``if`` statements inside ``root`` that separate the boundary from the body (also
    one on the last micro-batch of a micro-batch loop: ``if micro_step == N - 1:``)."""
    gates: list[Gate] = []
    for site in collector.ifs:
        node, ancestors, owner = site.node, site.ancestors, site.unit
        if not site.inside(root) and node is not root:
            continue
        test = read_gate(node.test, _lookup(owner, collector), collector.counters, owner.text_of)
        if test is None:
            test = (_last_micro_batch(owner, site, micro or []) or _window_call(owner, node.test)
                    or wrapper_gate(owner, node.test))
        if test is None:
            continue
        gate = _gate(owner, node, ancestors, test, root)
        if gate is not None and _qualifies(gate, events, accelerate, test) and not _reset_every_pass(root, gate, events):
            gates.append(gate)
    return gates + _within_gates(collector, root, gates)


def _within_gates(collector: Collector, root: cst.CSTNode, gates: list[Gate]) -> list[Gate]:
    """An ``if`` whose ``and`` test includes a gate's whole update test (``if step % N == 0
    and step % sched_every == 0:``) runs only at update boundaries, a subset of them."""
    tests = {_bare(g.node.test, collector.home): g for g in gates
             if not g.guard and g.update_branch is g.node.body and not isinstance(g.node.test, cst.BooleanOperation)}
    found: list[Gate] = []
    for site in collector.ifs:
        node = site.node
        if not (site.inside(root) and isinstance(node.test, cst.BooleanOperation) and isinstance(node.test.operator, cst.And)):
            continue
        if any(node is g.node for g in gates):
            continue
        for operand in _conjuncts(node.test):
            gate = tests.get(_bare(operand, site.unit))
            if gate is not None:
                found.append(Gate(node, site.unit.span(node), node.body, counter=gate.counter, modulus=gate.modulus,
                                  count_bound=gate.count_bound, offset_one=gate.offset_one))
                break
    return found


def _conjuncts(test: cst.BaseExpression) -> list[cst.BaseExpression]:
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
        return [*_conjuncts(test.left), *_conjuncts(test.right)]
    return [test]


def _bare(expr: cst.BaseExpression, unit: UnitModel) -> str:
    """A test's text without whitespace or outer parentheses, to compare tests as written."""
    return "".join(unit.text_of(expr).split()).strip("()")


def _last_micro_batch(unit: UnitModel, site: Site[cst.If], micro: list[cst.CSTNode]) -> GateTest | None:
    """The gate reading of an ``if`` on the last micro-batch of the micro-batch loop around it."""
    for loop in micro:
        if isinstance(loop, cst.For) and site.inside(loop):
            index = loop_index(unit, loop)
            if index is not None:
                return read_last_micro_batch(site.node.test, index)
    return None


def _window_call(unit: UnitModel, expr: cst.BaseExpression) -> GateTest | None:
    """``if history.step(N):`` where ``history`` holds a project object whose ``step`` counts its
    calls and is true on every N-th (gradlint/project/window_counters.py): true at an update,
    the counter incremented before the test."""
    name = dotted(expr.func) if isinstance(expr, cst.Call) else None
    reading = unit.facts.window_counters.get(name) if name else None
    if reading is None or not isinstance(expr, cst.Call) or name is None:
        return None
    args = [a.value for a in expr.args if a.keyword is None and not a.star]
    attribute, position = reading
    if len(args) <= position:
        return None
    return GateTest(True, f"{name.rsplit('.', 1)[0]}.{attribute}", args[position], offset_one=True)


def _lookup(owner: UnitModel, collector: Collector) -> Lookup:
    """A name's single assignment in the ``if``'s own unit, else in the loop's unit (a helper
    defined inside the loop reads the loop's variables: timm's ``_backward`` and ``need_update``),
    else its one gate among several assignments (:func:`_one_gate`)."""
    loop_unit = collector.home

    def lookup(name: str) -> cst.BaseExpression | None:
        found = owner.single_value(name) or loop_unit.single_value(name)
        return found if found is not None else _one_gate(owner, name, collector.counters)
    return lookup


def _one_gate(unit: UnitModel, name: str, counters: set[str]) -> cst.BaseExpression | None:
    """A flag assigned in several branches (``should_step = (i + 1) % acc == 0 or i + 1 ==
    epoch_length`` / ``should_step = (i + 1) % acc == 0`` / ``should_step = True`` when N is 1):
    the assignment with a final-window branch when every assignment that is not a constant
    reads as the same update gate (same N), else None."""
    values = [v for v in unit.bound_values(name) if isinstance(v, cst.BaseExpression)]
    tests = [v for v in values if not (isinstance(v, cst.Name) and v.value in ("True", "False"))]
    if len(values) < 2 or not tests:
        return None
    readings = [read_gate(v, unit.single_value, counters, unit.text_of) for v in tests]
    if any(r is None or not r.update_when or r.modulus is None for r in readings):
        return None
    if len({unit.text_of(r.modulus) for r in readings if r is not None and r.modulus is not None}) != 1:
        return None
    return next((v for v, r in zip(tests, readings, strict=True) if r is not None and r.final_branch), tests[0])


def _gate(unit: UnitModel, node: cst.If, ancestors: tuple[cst.CSTNode, ...], test: GateTest,
          root: cst.CSTNode) -> Gate | None:
    span = unit.span(node)
    head = Gate(node, span, None, counter=test.counter, modulus=test.modulus,
                count_bound=test.count_bound, offset_one=test.offset_one, final_branch=test.final_branch)
    if test.update_when:
        head.update_branch = node.body
        return head
    if not test.exact:
        return None
    if node.orelse is not None and isinstance(node.orelse, cst.Else):
        head.update_branch = node.orelse.body
        return head
    if _ends_with_continue(node.body):
        block = _loop_body(ancestors)
    elif _ends_with(node.body, cst.Return):
        block = _function_body(ancestors, root)
    else:
        return None
    if block is None:
        return None
    head.update_branch = block
    head.guard = True
    head.guard_chain = (*ancestors, node)
    return head


def _function_body(ancestors: tuple[cst.CSTNode, ...], root: cst.CSTNode) -> cst.CSTNode | None:
    """The body of the per-batch function ``root`` when an ``if <accumulating>: return`` stands
    in it outside any loop (``if not is_new_epoch and self.forward_count != N: return``): the
    rest of the function runs once per update. (Not in a helper a loop calls: how often that
    helper runs per batch is the caller's.)"""
    for index in range(len(ancestors) - 1, -1, -1):
        node = ancestors[index]
        if isinstance(node, (cst.For, cst.While)):
            return None
        if isinstance(node, cst.FunctionDef):
            if node is not root:
                return None
            body = ancestors[index + 1] if index + 1 < len(ancestors) else None
            return body if body is node.body and isinstance(body, cst.IndentedBlock) else None
    return None


def _loop_body(ancestors: tuple[cst.CSTNode, ...]) -> cst.CSTNode | None:
    """The body of the innermost loop around an ``if``: what its ``continue`` skips the rest
    of (also when the ``if`` sits in a branch: ``else: ...; if (i + 1) % N: continue``)."""
    for node in reversed(ancestors):
        if isinstance(node, (cst.For, cst.While)):
            return node.body if isinstance(node.body, cst.IndentedBlock) else None
    return next((a for a in reversed(ancestors) if isinstance(a, cst.IndentedBlock)), None)


def _ends_with_continue(block: cst.BaseSuite) -> bool:
    return _ends_with(block, cst.Continue)


def _ends_with(block: cst.BaseSuite, statement: type[cst.BaseSmallStatement]) -> bool:
    body = block.body
    last = body[-1] if body else None
    if isinstance(last, cst.SimpleStatementLine):
        return isinstance(last.body[-1], statement)
    return False


def _qualifies(gate: Gate, events: list[Event], accelerate: bool, test: GateTest) -> bool:
    """Whether an ``if`` separates the update boundary from micro-batches whose gradients
    it consumes. It must step on gradients accumulated outside it (a gate that zeroes,
    runs its own backward and steps is a self-contained, conditional update: TD3's delayed
    actor), or be the only place that zeroes them on its path; with a flag test
    (``sync_gradients``) or under Accelerate any boundary work counts. A periodic log, eval
    or LR tweak is no gate."""
    inside = [e for e in events if _in_branch(e, gate)]
    work = [e for e in inside if e.role in UPDATE_ROLES or e.role is Role.COUNTER and not _looped_in(e, gate)]
    if any(e.role is Role.STEP and not e.closure for e in work):
        return not _self_contained(inside) and not _cadence_update(gate, inside, events)
    zeros = [e for e in work if e.role is Role.ZERO_GRAD]
    if zeros:
        return not any(
            e.role is Role.ZERO_GRAD and not _in_branch(e, gate) and not TrainingLoop.exclusive(e, zeros[0])
            for e in events
        )
    flag_test = test.modulus is None and test.count_bound is None
    return bool(work) and (accelerate or flag_test)


def _looped_in(event: Event, gate: Gate) -> bool:
    """Whether a loop inside the gate's ``if`` repeats ``event`` (an evaluation pass called from
    a periodic branch counts its own batches): no once-per-update work."""
    chain = event.ancestors
    start = next((i for i, node in enumerate(chain) if node is gate.node), len(chain))
    return any(isinstance(node, (cst.For, cst.While)) for node in chain[start + 1:])


def _self_contained(inside: list[Event]) -> bool:
    """A branch that zeroes gradients and then computes fresh ones before stepping."""
    zeros = [e for e in inside if e.role is Role.ZERO_GRAD]
    return any(z.order < b.order for z in zeros for b in inside if b.role is Role.BACKWARD)


def _reset_every_pass(root: cst.CSTNode, gate: Gate, events: list[Event]) -> bool:
    """A gate that only zeroes, on a counter the scope sets back to 0 unconditionally on every
    pass (``self.n_backward = 0`` at the end of ``batch_update``): it fires on every pass, so
    it marks no window."""
    if gate.counter is None or any(e.role is Role.STEP and _in_branch(e, gate) for e in events):
        return False
    body = getattr(root, "body", None)
    for statement in body.body if isinstance(body, cst.IndentedBlock) else ():
        if gate.guard and statement is gate.node:
            break  # after `if count != N: return` a reset runs at the boundary only
        if not isinstance(statement, cst.SimpleStatementLine):
            continue
        for small in statement.body:
            if isinstance(small, cst.Assign) and isinstance(small.value, cst.Integer) \
                    and small.value.evaluated_value == 0 \
                    and any(dotted(t.target) == gate.counter for t in small.targets):
                return True
    return False


def _cadence_update(gate: Gate, inside: list[Event], events: list[Event]) -> bool:
    """A branch that runs its own backward before its step, with no gradients from outside
    it waiting for that step: a GAN's ``if it % d_iters == 0`` generator update, TD3's
    delayed actor. Outside backwards wait for it when they run earlier in the pass and no
    step outside the branch consumes them first, or sit in the gate's other branch
    (``else: with model.no_sync(): loss.backward()``)."""
    steps = [e.order for e in inside if e.role is Role.STEP and not e.closure]
    first_step = min(steps)
    if not any(e.role is Role.BACKWARD and e.order < first_step for e in inside):
        return False
    outside = [e for e in events if not _in_branch(e, gate)]
    for backward in (e for e in outside if e.role is Role.BACKWARD):
        if backward.inside(gate.node):
            return False  # the gate's other branch
        consumed = any(s.role is Role.STEP and not s.closure and backward.order < s.order < first_step
                       for s in outside)
        if backward.order < first_step and not consumed:
            return False
    return True


def _in_branch(event: Event, gate: Gate) -> bool:
    if gate.update_branch is None:
        return False
    if gate.guard:
        return after_guard(event, gate)
    return event.inside(gate.update_branch)


def after_guard(event: Event, gate: Gate) -> bool:
    """Events after ``if <not update>: continue`` in the same loop body run once per update:
    at the innermost block holding both, the event's statement comes after the guard's
    (statement order, so events of called helpers count too; an event in a branch the guard
    is not in runs before it or instead of it)."""
    chain = gate.guard_chain
    start = next((i for i, node in enumerate(chain) if node is gate.update_branch), None)
    if start is None or not event.inside(chain[start]):
        return False
    for k in range(start, len(chain) - 1):
        block = chain[k]
        if not isinstance(block, cst.IndentedBlock):
            continue
        if not event.inside(block):
            return False
        mine = _child_of(block, event.ancestors, event.statement)
        if mine is chain[k + 1]:
            continue
        body = list(block.body)
        position = next((i for i, stmt in enumerate(body) if stmt is mine), None)
        guard = next((i for i, stmt in enumerate(body) if stmt is chain[k + 1]), None)
        return position is not None and guard is not None and position > guard
    return False


def _child_of(block: cst.CSTNode | None, chain: tuple[cst.CSTNode, ...], last: cst.CSTNode) -> cst.CSTNode:
    """The statement of ``block`` that holds the end of ``chain`` (``last`` when the chain
    ends at ``block``)."""
    index = next((i for i, node in enumerate(chain) if node is block), len(chain))
    return chain[index + 1] if index + 1 < len(chain) else last


def engine_window(unit: UnitModel, gate: Gate) -> bool:
    """Whether an engine owns the window the gate seems to count, so the gated calls decide
    nothing: N is read from a DeepSpeed configuration (Accelerate's
    ``accelerator.state.deepspeed_plugin.deepspeed_config["gradient_accumulation_steps"]``,
    N is 1 otherwise), where the prepared optimizer's and scheduler's calls are the engine's
    no-op wrappers and the engine steps inside ``accelerator.backward``. Such a gate neither
    drops a tail nor shifts a window. (A DeepSpeed engine stepped by hand under a gate is
    GL406's.)"""
    bound = gate.modulus if gate.modulus is not None else gate.count_bound
    names = names_in(bound) if bound is not None else set()
    return any("deepspeed" in unit.text_of(value).lower() for name in names for value in unit.bound_values(name))


def zero_based(unit: UnitModel, gate: Gate, root: cst.CSTNode, events: list[Event]) -> bool:
    """Whether the gate's counter reads 0 on the first micro-batch: an ``enumerate`` index
    without ``start``, a ``range`` variable, Lightning's ``batch_idx``, or a counter that is
    incremented only after the gate."""
    counter = gate.counter
    if counter is None or gate.offset_one:
        return False
    if isinstance(root, cst.For) and loop_index(unit, root) == counter:
        return True
    if isinstance(root, cst.FunctionDef):
        params = {p.name.value for p in root.params.params}
        if counter in params and counter in _ZERO_BASED_PARAMS:
            return True
    increments = [e for e in events if e.role is Role.COUNTER and e.receiver == counter]
    gated = [e.order for e in events if e.inside(gate.node)]
    return bool(increments and gated) and all(e.order > min(gated) for e in increments)


def restarts_each_epoch(unit: UnitModel, gate: Gate, root: cst.CSTNode, events: list[Event]) -> bool:
    """Whether the gate's window count starts afresh with each pass over the data: a ``count ==
    N`` window, the loop's own enumerate index or a name the loop sets from it (``self.batch_index
    = b_idx``), or a counter set back to 0 once per epoch outside the loop (in the epoch loop
    around it, or in a function that runs one epoch per call: ``self.step = 0`` after the loop)."""
    counter = gate.counter
    if gate.count_bound is not None:
        return True
    if counter is None:
        return False
    span = unit.span(root)
    index = loop_index(unit, root, any_start=True) if isinstance(root, cst.For) else None
    if index is not None and counter == index:
        return True
    assigned = unit.assignments.get(counter, [])
    within = [v for line, v in assigned if span.line <= line <= span.end_line]
    if index is not None and any(dotted(v) == index for v in within):
        return True
    resets = [line for line, v in assigned if not span.line <= line <= span.end_line
              and isinstance(v, cst.Integer) and v.evaluated_value == 0]
    if not resets:
        return False
    epochs = _loops_around(unit, root, events)
    if any(loop.line <= line <= loop.end_line for loop in epochs for line in resets):
        return True
    own = unit.unit
    epoch_function = "epoch" in own.name.lower() or (own.class_name, own.name) in unit.facts.per_epoch_units
    return epoch_function and root is not unit.root and not epochs


def _loops_around(unit: UnitModel, root: cst.CSTNode, events: list[Event]) -> list[Span]:
    """The spans of the loops of ``unit`` around ``root``."""
    for event in events:
        chain = event.ancestors
        index = next((i for i, node in enumerate(chain) if node is root), None)
        if index is not None:
            return [unit.span(a) for a in chain[:index] if isinstance(a, (cst.For, cst.While)) and a in unit.positions]
    return []


def one_based(unit: UnitModel, gate: Gate, root: cst.CSTNode, events: list[Event]) -> bool:
    """Whether the gate's counter reads 1 on the first micro-batch: set to 0 outside the loop and
    incremented (``+= 1``) on every pass before the gate, never after it or inside it."""
    counter = gate.counter
    if counter is None:
        return False
    increments = [e for e in events if e.role is Role.COUNTER and e.receiver == counter]
    gated = [e.order for e in events if e.inside(gate.node)]
    if not increments or not gated or any(e.inside(gate.node) or e.order > min(gated) for e in increments):
        return False
    if any(isinstance(a, cst.If) for e in increments for a in e.ancestors[_after(e, root):]):
        return False  # counted only on some passes
    span = unit.span(root)
    return any(isinstance(value, cst.Integer) and value.evaluated_value == 0 and not span.line <= line <= span.end_line
               for line, value in unit.assignments.get(counter, []))


def _after(event: Event, node: cst.CSTNode) -> int:
    """The index in ``event``'s ancestors just below ``node`` (0 when ``node`` is not one)."""
    return next((i + 1 for i, a in enumerate(event.ancestors) if a is node), 0)


def loop_index(unit: UnitModel, loop: cst.For, any_start: bool = False) -> str | None:
    """The 0-based index a ``for`` binds: ``i`` in ``for i, b in enumerate(x)`` or ``for i in range(n)``
    (with ``any_start``, also ``enumerate(x, start=1)``)."""
    source = iterable_of(unit, loop)
    if not isinstance(source, cst.Call):
        return None
    func = dotted(source.func)
    if func == "enumerate" and isinstance(loop.target, cst.Tuple) and loop.target.elements:
        starts = [a.value for a in source.args[1:] if a.keyword is None]
        starts += [a.value for a in source.args if a.keyword and a.keyword.value == "start"]
        from_zero = not starts or (isinstance(starts[0], cst.Integer) and starts[0].evaluated_value == 0)
        if not from_zero and not any_start:
            return None
        return dotted(loop.target.elements[0].value)
    if func == "range" and len(source.args) == 1:
        return dotted(loop.target)
    return None


def iterable_of(unit: UnitModel, loop: cst.For) -> cst.BaseExpression:
    """What a ``for`` iterates, through ``tqdm``-style wrappers and a variable assigned once
    (``pbar = tqdm(enumerate(loader)); for i, batch in pbar:``)."""
    source = loop.iter
    name = dotted(source)
    if name is not None:
        source = unit.single_value(name) or source
    while isinstance(source, cst.Call) and dotted(source.func) in ("tqdm", "tqdm.tqdm", "tqdm.auto.tqdm") and source.args:
        source = source.args[0].value
    return source


def epoch_length(unit: UnitModel, gate: Gate, root: cst.CSTNode) -> cst.BaseExpression | None:
    """``len(loader)`` from ``(i + 1) % N == 0 or i + 1 == len(loader)`` over
    ``for i, batch in enumerate(loader)``, the only final-window form whose window size
    follows from the counter alone."""
    if not (gate.offset_one and gate.modulus is not None and isinstance(root, cst.For)):
        return None
    source, target = root.iter, root.target
    if not (isinstance(source, cst.Call) and dotted(source.func) == "enumerate" and len(source.args) == 1
            and isinstance(target, cst.Tuple) and dotted(target.elements[0].value) == gate.counter):
        return None
    test = gate.node.test
    operands = [test.left, test.right] if isinstance(test, cst.BooleanOperation) else []
    for expr in operands:
        if isinstance(expr, cst.Comparison) and len(expr.comparisons) == 1 \
                and isinstance(expr.comparisons[0].operator, cst.Equal):
            sides = [expr.left, expr.comparisons[0].comparator]
            for side, other in (sides, sides[::-1]):
                if unit.text_of(side).replace(" ", "").strip("()") == f"{gate.counter}+1":
                    return other
    return None
