"""Build the training loops of one unit: find events, pick iteration scopes, place events."""

from __future__ import annotations

import re
from collections.abc import Callable

import libcst as cst

from gradlint.model.calls import classify
from gradlint.model.events import UPDATE_ROLES, Event, Gate, Place, Role, Shape, TrainingLoop
from gradlint.model.gates import GateTest, read_gate
from gradlint.model.syntax import dotted, names_in
from gradlint.model.unit import UnitModel
from gradlint.names import Kind

_LOOPS = (cst.For, cst.While)
_INLINE_DEPTH = 2
Resolver = Callable[[cst.Call, UnitModel], "UnitModel | None"]
_SCOPES_SKIPPED = (cst.FunctionDef, cst.ClassDef, cst.Lambda)
_MICRO_HEADER = re.compile(r"micro|accum|grad_acc|n_acc|acc_steps", re.I)
_CADENCE_CALL = re.compile(r"log|save|checkpoint|eval|add_scalar|print|wandb|write|report|step", re.I)
_SYNC_CONTEXTS = ("no_sync", "no_backward_sync", "accumulate")
_UNBOUNDED = frozenset({"range", "count", "cycle", "repeat", "itertools.count", "itertools.cycle"})
_ZERO_BASED_PARAMS = frozenset({"batch_idx", "batch_nb", "batch_index", "batch_num", "idx"})


class _Collector(cst.CSTVisitor):
    """Collect events, loops, ifs, withs and assignments with their ancestors.

    A call to a function of the same module that itself trains (``self.train_step(batch)``)
    is followed into that function, up to two levels deep: its events join the caller's, at
    the call site, each still pointing at its own unit for positions and loss tracing.
    """

    def __init__(self, unit: UnitModel, resolve: Resolver | None = None) -> None:
        self.unit = unit
        self.resolve = resolve
        self._chain: list[UnitModel] = [unit]
        self.events: list[Event] = []
        self.loops: list[tuple[cst.CSTNode, UnitModel]] = []
        self.ifs: list[tuple[cst.If, tuple[cst.CSTNode, ...], UnitModel]] = []
        self.withs: list[tuple[cst.With, UnitModel]] = []
        self.counters: set[str] = set()
        self.reported: set[str] = set()
        self.callees: list[tuple[str, tuple[cst.CSTNode, ...]]] = []
        self._stack: list[cst.CSTNode] = []
        self._statement: cst.CSTNode | None = None

    def on_visit(self, node: cst.CSTNode) -> bool:
        if isinstance(node, _SCOPES_SKIPPED) and node is not self.unit.root:
            return False
        if isinstance(node, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
            self._statement = node
        if isinstance(node, _LOOPS):
            self.loops.append((node, self.unit))
        elif isinstance(node, cst.If):
            self.ifs.append((node, tuple(self._stack), self.unit))
        elif isinstance(node, cst.With):
            self.withs.append((node, self.unit))
        elif isinstance(node, cst.Call):
            self._call(node)
            self._report_call(node)
        elif isinstance(node, (cst.Assign, cst.AugAssign, cst.AnnAssign)):
            self._assignment(node)
        self._stack.append(node)
        return True

    def on_leave(self, original_node: cst.CSTNode) -> None:
        if self._stack and self._stack[-1] is original_node:
            self._stack.pop()

    def _add(self, role: Role, node: cst.CSTNode, **details: object) -> None:
        statement = node if isinstance(node, cst.BaseCompoundStatement) else self._statement or node
        self.events.append(Event(role, node, statement, ancestors=tuple(self._stack), unit=self.unit, **details))

    def _call(self, call: cst.Call) -> None:
        found = classify(call, self.unit.facts)
        if found is None:
            callee = self.resolve(call, self.unit) if self.resolve and len(self._chain) <= _INLINE_DEPTH else None
            if callee is not None and all(callee is not u for u in self._chain):
                self._inline(call, callee)
            return
        self._add(found.role, call, receiver=found.receiver, kind=found.kind, target=found.target,
                  loss=found.loss, framework=found.framework, closure=found.closure,
                  metric=found.metric)

    def _inline(self, call: cst.Call, callee: UnitModel) -> None:
        saved = (self.unit, self._stack, self._statement)
        self._chain.append(callee)
        self.unit, self._stack = callee, [*self._stack, call]
        callee.root.visit(self)
        callee.visited = True
        self._chain.pop()
        self.unit, self._stack, self._statement = saved

    def _report_call(self, call: cst.Call) -> None:
        """Names handed to logging, evaluation or checkpoint calls: step-counted cadence."""
        callee = dotted(call.func) or ""
        if callee:
            self.callees.append((callee.rsplit(".", 1)[-1], tuple(self._stack)))
        if _CADENCE_CALL.search(callee.rsplit(".", 1)[-1]):
            for arg in call.args:
                self.reported |= names_in(arg.value)

    def _assignment(self, node: cst.Assign | cst.AugAssign | cst.AnnAssign) -> None:
        line = self.unit.span(node).line
        if isinstance(node, cst.AugAssign):
            name = dotted(node.target)
            if name is None:
                return
            self._record(name, line, node)
            if isinstance(node.operator, cst.AddAssign) and isinstance(node.value, cst.Integer):
                self.counters.add(name)
                self._add(Role.COUNTER, node, receiver=name)
            return
        targets = [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
        for target in targets:
            if isinstance(target, cst.Attribute) and target.attr.value == "require_backward_grad_sync":
                self._add(Role.SYNC_TOGGLE, node, receiver=dotted(target.value))
            if _is_grad_reset(target, node.value):
                self._add(Role.ZERO_GRAD, self._zeroing_loop(target) or node, receiver=dotted(target))
            name = dotted(target)
            if name is not None and node.value is not None:
                self._record(name, line, node.value)

    def _record(self, name: str, line: int, value: cst.CSTNode) -> None:
        if not self.unit.visited:
            self.unit.assignments.setdefault(name, []).append((line, value))


    def _zeroing_loop(self, target: cst.Attribute) -> cst.For | None:
        """The ``for p in params:`` loop around ``p.grad = None``: the zeroing statement."""
        loop = next((a for a in reversed(self._stack) if isinstance(a, _LOOPS)), None)
        if isinstance(loop, cst.For) and dotted(loop.target) == dotted(target.value):
            return loop
        return None


def _is_grad_reset(target: cst.BaseExpression, value: cst.BaseExpression | None) -> bool:
    """``p.grad = None`` (or ``p.grad = torch.zeros_like(...)``)."""
    return (
        isinstance(target, cst.Attribute)
        and target.attr.value == "grad"
        and isinstance(value, cst.Name)
        and value.value == "None"
    )


def build_loops(unit: UnitModel, resolve: Resolver | None = None) -> list[TrainingLoop]:
    """All training loops of ``unit``, with every event placed; ``resolve`` finds the
    training functions of the same module that a call reaches."""
    collector = _Collector(unit, resolve)
    unit.root.visit(collector)
    unit.visited = True
    events = collector.events
    for order, event in enumerate(events):
        event.order = order
        event.span = event.unit.span(event.node)
    loops = []
    for root, micro in _scopes(unit, collector, events):
        loops.append(_place(unit, collector, root, micro, [e for e in events if e.inside(root)]))
    return loops


def _has(events: list[Event], node: cst.CSTNode, role: Role) -> bool:
    return any(e.role is role and e.inside(node) and not e.closure for e in events)


def _scopes(unit: UnitModel, collector: _Collector, events: list[Event]) -> list[tuple[cst.CSTNode, list]]:
    """Pick iteration scopes: the innermost loop with both backward and step, else the
    per-batch function; a loop that looks like a micro-batch loop promotes to its parent.
    A complete training loop inside a called helper is that helper's own scope, and the
    caller's loops around it are not training loops (``fit`` calling ``train_epoch``)."""
    loops = [loop for loop, _ in collector.loops]
    own = {id(loop) for loop, owner in collector.loops if owner is unit} | {id(unit.root)}
    both = [loop for loop in loops if _has(events, loop, Role.BACKWARD) and _has(events, loop, Role.STEP)]
    innermost = [loop for loop in both if not any(o is not loop and _encloses(loop, o, events) for o in both)]
    scopes: list[tuple[cst.CSTNode, list]] = []
    for loop in innermost:
        parent = _parent_loop(loop, loops, events)
        if _is_micro_header(unit, loop) and (parent is not None or isinstance(unit.root, cst.FunctionDef)):
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


def _encloses(outer: cst.CSTNode, inner: cst.CSTNode, events: list[Event]) -> bool:
    """Whether ``outer`` contains ``inner`` (judged through the events' ancestor chains)."""
    return any(e.inside(inner) and e.inside(outer) and _index(e, outer) < _index(e, inner) for e in events)


def _index(event: Event, node: cst.CSTNode) -> int:
    return next(i for i, a in enumerate(event.ancestors) if a is node)


def _parent_loop(loop: cst.CSTNode, loops: list[cst.CSTNode], events: list[Event]) -> cst.CSTNode | None:
    for event in events:
        if event.inside(loop):
            chain = event.ancestors[: _index(event, loop)]
            parents = [a for a in chain if isinstance(a, _LOOPS)]
            return parents[-1] if parents else None
    return None


def _micro_loops(root: cst.CSTNode, loops: list[cst.CSTNode], events: list[Event]) -> list[cst.CSTNode]:
    """The outermost loops strictly inside ``root`` that hold a backward call."""
    found: list[cst.CSTNode] = []
    for event in events:
        if event.role is not Role.BACKWARD or not event.inside(root):
            continue
        chain = event.ancestors[_index(event, root) + 1 :] if root in event.ancestors else event.ancestors
        inner = next((a for a in chain if isinstance(a, _LOOPS)), None)
        if inner is not None and not any(inner is f for f in found):
            found.append(inner)
    return found


def _is_micro_header(unit: UnitModel, loop: cst.CSTNode) -> bool:
    """``for micro_step in ...``, ``for _ in range(accum_steps)``, ``for mb in micro_batches``."""
    if not isinstance(loop, cst.For):
        return False
    if _MICRO_HEADER.search(unit.code(loop.target)):
        return True
    source = loop.iter
    if isinstance(source, cst.Call) and dotted(source.func) == "range" and len(source.args) == 1:
        source = source.args[0].value
    name = dotted(source)
    return name is not None and bool(_MICRO_HEADER.search(name))


def _place(
    unit: UnitModel, collector: _Collector, root: cst.CSTNode, micro: list[cst.CSTNode], events: list[Event]
) -> TrainingLoop:
    """Decide the shape of one scope and where each of its events runs."""
    accumulate = [w for w, owner in collector.withs if _is_accumulate(owner, w) and _contains(events, w)]
    gates = _gates(collector, root, events, bool(accumulate))
    if accumulate:
        shape = Shape.ACCELERATE
    elif gates:
        shape = Shape.GATED
    elif micro:
        shape = Shape.NESTED
    else:
        shape = Shape.PLAIN
    sync_blocks = [w for w, owner in collector.withs if _is_sync_context(owner, w)]
    for event in events:
        event.place = _place_of(event, shape, gates, micro)
        event.no_sync = any(event.inside(w) for w in sync_blocks)
    for gate in gates:
        gate.zero_based = _zero_based(unit, gate, root, events)
        gate.restarts_each_epoch = gate.count_bound is not None or (
            isinstance(root, cst.For) and gate.counter is not None and _loop_index(root, any_start=True) == gate.counter
        )
    gate_nodes = [g.node for g in gates]
    cadence = set(collector.reported)
    for node, _, _ in collector.ifs:
        if not any(node is g for g in gate_nodes):
            cadence |= names_in(node.test)
    loop = TrainingLoop(root=root, unit=unit, shape=shape, events=events, gates=gates,
                        micro_loops=micro, accumulate_blocks=accumulate,
                        iterates_loader=_iterates_loader(unit, root), cadence_names=frozenset(cadence),
                        callees=frozenset(name for name, chain in collector.callees if any(a is root for a in chain)))
    loop.factor = _factor(unit, loop)
    return loop


def _is_sync_context(unit: UnitModel, with_node: cst.With) -> bool:
    """``with model.no_sync():``, ``fabric.no_backward_sync(...)``, ``accelerator.accumulate``,
    or a context variable chosen from one (``ctx = nullcontext() if last else model.no_sync()``)."""
    for item in with_node.items:
        expr = item.item
        if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute):
            if expr.func.attr.value in _SYNC_CONTEXTS:
                return True
        name = dotted(expr.func if isinstance(expr, cst.Call) else expr)
        for value in unit.bound_values(name) if name else []:
            if any(word in unit.code(value) for word in _SYNC_CONTEXTS):
                return True
    return False


def _iterates_loader(unit: UnitModel, root: cst.CSTNode) -> bool:
    """A ``for`` over a finite data loader (not ``range``/``count``), or a ``while`` that
    drains one (``while i < len(loader)``, ``next(it)`` until ``StopIteration``)."""
    if isinstance(root, cst.While):
        return "len(" in unit.code(root.test) or "StopIteration" in unit.code(root.body)
    if not isinstance(root, cst.For):
        return False
    source = root.iter
    while isinstance(source, cst.Call) and dotted(source.func) in ("enumerate", "tqdm", "tqdm.tqdm", "zip"):
        if not source.args:
            return False
        source = source.args[0].value
    if isinstance(source, cst.Call):
        return dotted(source.func) not in _UNBOUNDED
    return True


def _zero_based(unit: UnitModel, gate: Gate, root: cst.CSTNode, events: list[Event]) -> bool:
    """Whether the gate's counter reads 0 on the first micro-batch: an ``enumerate`` index
    without ``start``, a ``range`` variable, Lightning's ``batch_idx``, or a counter that is
    incremented only after the gate."""
    counter = gate.counter
    if counter is None or gate.offset_one:
        return False
    if isinstance(root, cst.For) and _loop_index(root) == counter:
        return True
    if isinstance(root, cst.FunctionDef):
        params = {p.name.value for p in root.params.params}
        if counter in params and counter in _ZERO_BASED_PARAMS:
            return True
    increments = [e for e in events if e.role is Role.COUNTER and e.receiver == counter]
    gated = [e.order for e in events if e.inside(gate.node)]
    return bool(increments and gated) and all(e.order > min(gated) for e in increments)


def _loop_index(loop: cst.For, any_start: bool = False) -> str | None:
    """The 0-based index a ``for`` binds: ``i`` in ``for i, b in enumerate(x)`` or ``for i in range(n)``
    (with ``any_start``, also ``enumerate(x, start=1)``)."""
    source = loop.iter
    if not isinstance(source, cst.Call):
        return None
    func = dotted(source.func)
    if func == "enumerate" and isinstance(loop.target, cst.Tuple) and loop.target.elements:
        starts = [a for a in source.args[1:] if a.keyword is None] + [a for a in source.args if a.keyword and a.keyword.value == "start"]
        if starts and not any_start and not (isinstance(starts[0].value, cst.Integer) and starts[0].value.evaluated_value == 0):
            return None
        return dotted(loop.target.elements[0].value)
    if func == "range" and len(source.args) == 1:
        return dotted(loop.target)
    return None


def _place_of(event: Event, shape: Shape, gates: list[Gate], micro: list[cst.CSTNode]) -> Place:
    for gate in gates:
        if gate.guard:
            if _after_guard(event, gate):
                return Place.BOUNDARY
        elif gate.update_branch is not None and event.inside(gate.update_branch):
            return Place.BOUNDARY
    if any(event.inside(loop) for loop in micro):
        return Place.MICRO
    if shape is Shape.PLAIN:
        return Place.EVERY
    if shape is Shape.NESTED:
        return Place.BOUNDARY
    return Place.MICRO


def _after_guard(event: Event, gate: Gate) -> bool:
    """Events after ``if <not update>: continue`` in the same block run once per update."""
    return event.span.line > gate.span.end_line and gate.update_branch is not None and event.inside(gate.update_branch)


def _contains(events: list[Event], node: cst.CSTNode) -> bool:
    return any(e.inside(node) for e in events)


def _is_accumulate(unit: UnitModel, with_node: cst.With) -> bool:
    for item in with_node.items:
        call = item.item
        if isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute):
            if call.func.attr.value == "accumulate" and unit.facts.kind_of(dotted(call.func.value)) is Kind.ACCELERATOR:
                return True
    return False


def _gates(collector: _Collector, root: cst.CSTNode, events: list[Event], accelerate: bool) -> list[Gate]:
    """The ``if`` statements inside ``root`` that separate the boundary from the body."""
    gates: list[Gate] = []
    for node, ancestors, owner in collector.ifs:
        if not any(a is root for a in ancestors) and node is not root:
            continue
        test = read_gate(node.test, owner.single_value, collector.counters, owner.code)
        if test is None:
            continue
        gate = _gate(owner, node, ancestors, test)
        if gate is not None and _qualifies(gate, events, accelerate, test):
            gates.append(gate)
    return gates


def _gate(unit: UnitModel, node: cst.If, ancestors: tuple[cst.CSTNode, ...], test: GateTest) -> Gate | None:
    span = unit.span(node)
    head = Gate(node, span, None, counter=test.counter, modulus=test.modulus,
                count_bound=test.count_bound, offset_one=test.offset_one, final_branch=test.final_branch)
    if test.update_when:
        head.update_branch = node.body
        return head
    if node.orelse is not None and isinstance(node.orelse, cst.Else):
        head.update_branch = node.orelse.body
        return head
    if _ends_with_continue(node.body):
        block = next((a for a in reversed(ancestors) if isinstance(a, cst.IndentedBlock)), None)
        head.update_branch = block
        head.guard = True
        return head
    return None


def _ends_with_continue(block: cst.BaseSuite) -> bool:
    body = block.body
    last = body[-1] if body else None
    if isinstance(last, cst.SimpleStatementLine):
        return isinstance(last.body[-1], cst.Continue)
    return False


def _qualifies(gate: Gate, events: list[Event], accelerate: bool, test: GateTest) -> bool:
    """Whether an ``if`` separates the update boundary from micro-batches whose gradients
    it consumes. It must step on gradients accumulated outside it (a gate that runs its own
    zero_grad/backward/step is a self-contained, conditional update: TD3's delayed actor),
    or be the only place that zeroes them; with a flag test (``sync_gradients``) or under
    Accelerate any boundary work counts. A periodic log, eval or LR tweak is no gate."""
    inside = [e for e in events if e.role in UPDATE_ROLES | {Role.COUNTER} and _in_branch(e, gate)]
    backward_inside = any(e.role is Role.BACKWARD and _in_branch(e, gate) for e in events)
    if any(e.role is Role.STEP and not e.closure for e in inside):
        return not backward_inside
    if any(e.role is Role.ZERO_GRAD for e in inside):
        return not any(e.role is Role.ZERO_GRAD and not _in_branch(e, gate) for e in events)
    flag_test = test.modulus is None and test.count_bound is None
    return bool(inside) and (accelerate or flag_test)


def _in_branch(event: Event, gate: Gate) -> bool:
    if gate.update_branch is None:
        return False
    if gate.guard:
        return _after_guard(event, gate)
    return event.inside(gate.update_branch)


def _factor(unit: UnitModel, loop: TrainingLoop) -> cst.BaseExpression | None:
    gate = loop.primary_gate
    if gate is not None:
        return gate.modulus if gate.modulus is not None else gate.count_bound
    for micro in loop.micro_loops:
        if isinstance(micro, cst.For) and isinstance(micro.iter, cst.Call) and dotted(micro.iter.func) == "range":
            args = [a.value for a in micro.iter.args]
            if len(args) == 1:
                return args[0]
    return None
