"""The loop model as data: events, gates and training loops.

An *event* is one call (or statement) with a role in the update skeleton. A *training loop*
is the code that repeats once per iteration (a ``for``/``while`` body or a per-batch
function), its events in source order, and where each event runs: once per micro-batch,
once per update, or on every iteration of a plain loop. Rules read this model; none of them
walks syntax on its own.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum
from functools import cached_property
from typing import TYPE_CHECKING

import libcst as cst

from gradlint.diagnostics import Span
from gradlint.model.loss import LossTrace, trace_loss
from gradlint.model.syntax import dotted, first_arg
from gradlint.names import Kind

if TYPE_CHECKING:
    from gradlint.model.unit import UnitModel


class Role(str, Enum):
    """The part an event plays in the update skeleton."""

    BACKWARD = "backward"
    STEP = "step"
    ZERO_GRAD = "zero_grad"
    CLIP = "clip"
    UNSCALE = "unscale"
    SCALER_UPDATE = "scaler_update"
    SCHEDULER_STEP = "scheduler_step"
    COUNTER = "counter"
    SYNC_TOGGLE = "sync_toggle"  # `model.require_backward_grad_sync = ...` (nanoGPT)


UPDATE_ROLES = frozenset({Role.STEP, Role.ZERO_GRAD, Role.CLIP, Role.UNSCALE, Role.SCALER_UPDATE, Role.SCHEDULER_STEP})


class Place(str, Enum):
    """How often an event runs relative to optimizer updates."""

    MICRO = "micro-batch body"
    BOUNDARY = "update boundary"
    EVERY = "every iteration"


class Shape(str, Enum):
    """How a training loop arranges its accumulation window."""

    PLAIN = "plain"  # backward and step on every iteration
    NESTED = "nested"  # an inner micro-batch loop, update after it
    GATED = "gated"  # a counted or flagged gate inside a flat loop
    ACCELERATE = "accelerate"  # `with accelerator.accumulate(model):`
    FRAMEWORK = "framework"  # a method the framework calls per micro-batch, owning the boundary (HF Trainer)


@dataclass(frozen=True)
class RoleRecord:
    """What the collector found a call (or statement) to do: its role and what it acts on."""

    role: Role
    receiver: str | None = None
    kind: Kind | None = None
    target: str | None = None
    loss: cst.BaseExpression | None = None
    framework: str | None = None
    closure: bool = False
    metric: bool = False
    gated_by: cst.BaseExpression | None = None  # a keyword test deciding whether the call steps


@dataclass(eq=False)
class Event:
    """One call or statement with a role in the skeleton: the collector's record, where it
    stands, and (once the loop is built) where it runs."""

    record: RoleRecord
    node: cst.CSTNode
    statement: cst.CSTNode
    unit: UnitModel  # where the node lives (a called helper's unit when followed)
    ancestors: tuple[cst.CSTNode, ...] = ()
    order: int = 0
    span: Span = Span(0, 0, 0, 0)
    place: Place = Place.EVERY
    no_sync: bool = False  # inside `no_sync()`, `no_backward_sync()` or `accumulate()`
    callers: tuple[tuple[cst.Call, UnitModel], ...] = ()  # the followed calls that reach ``unit``, outermost first

    @property
    def role(self) -> Role:
        return self.record.role

    @property
    def receiver(self) -> str | None:
        return self.record.receiver

    @property
    def kind(self) -> Kind | None:
        return self.record.kind

    @property
    def target(self) -> str | None:
        return self.record.target

    @property
    def loss(self) -> cst.BaseExpression | None:
        return self.record.loss

    @property
    def framework(self) -> str | None:
        return self.record.framework

    @property
    def closure(self) -> bool:
        return self.record.closure

    @property
    def metric(self) -> bool:
        return self.record.metric

    def inside(self, node: cst.CSTNode) -> bool:
        """Whether ``node`` encloses this event."""
        return any(a is node for a in self.ancestors)

    @property
    def engine_owned(self) -> bool:
        """DeepSpeed engines own scaling, clipping and the update boundary."""
        return self.kind in (Kind.ENGINE, Kind.ENGINE_PART)

    @cached_property
    def loss_trace(self) -> LossTrace:
        """Where the loss of a backward call comes from and how it is scaled."""
        return trace_loss(self.unit, self.loss, self.span.line, self.callers)

    @property
    def framework_divides(self) -> bool:
        """A backward that divides the loss by N itself: DeepSpeed's ``engine.backward``, or
        ``accelerator.backward`` under ``Accelerator(gradient_accumulation_steps=N)``."""
        if self.framework == "deepspeed":
            return True
        return self.framework == "accelerate" and self.unit.facts.accelerator_accumulates

    @property
    def amp_scaled(self) -> bool:
        """The backward's loss goes through a loss-scaling call (``scaler.scale(loss)``)."""
        return self.loss is not None and any(_callee_name(call).endswith("scale") for call in _calls_in(self.loss))

    @property
    def unscaled_loss(self) -> cst.BaseExpression | None:
        """The loss before AMP scaling: ``loss`` in ``scaler.scale(loss).backward()``, else the
        backward's loss (None when a ``scale()`` call has no argument)."""
        loss = self.loss
        if isinstance(loss, cst.Call) and isinstance(loss.func, cst.Attribute) and loss.func.attr.value == "scale":
            return first_arg(loss)
        return loss

    @property
    def receiver_node(self) -> cst.BaseExpression | None:
        """What a method call is made on: ``model`` in ``model.zero_grad()``."""
        node = self.node
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
            return node.func.value
        return None


@dataclass(eq=False)
class Gate:
    """An ``if`` that separates the update boundary from the micro-batch body."""

    node: cst.If
    span: Span
    update_branch: cst.CSTNode | None
    guard: bool = False  # `if not <gate>: continue` guards the rest of the block
    guard_chain: tuple[cst.CSTNode, ...] = ()  # the guard's ancestors and the guard itself
    counter: str | None = None
    modulus: cst.BaseExpression | None = None
    count_bound: cst.BaseExpression | None = None
    offset_one: bool = False  # the test reads `(i + 1) % N` or compares with N - 1
    final_branch: bool = False
    zero_based: bool = False  # the counter is 0 on the first micro-batch of the epoch
    one_based: bool = False  # `(c + 1) % N` on a counter that is already 1 on the first micro-batch
    restarts_each_epoch: bool = False  # the loop's own enumerate index, or a `count == N` window
    epoch_length: cst.BaseExpression | None = None  # `len(loader)` in `... or i + 1 == len(loader)`
    engine_window: bool = False  # an engine owns the window: the gated calls decide nothing (gate_search.py)


@dataclass(eq=False)
class TrainingLoop:
    """One iteration scope of a training loop, with its events placed."""

    root: cst.CSTNode
    unit: UnitModel
    shape: Shape
    events: list[Event]
    gates: list[Gate] = field(default_factory=list)
    micro_loops: list[cst.CSTNode] = field(default_factory=list)
    accumulate_blocks: list[cst.With] = field(default_factory=list)
    factor: cst.BaseExpression | None = None
    iterates_loader: bool = False  # a `for` over a finite data loader
    tail_guarded: bool = False  # the epoch's tail is skipped before its forward pass
    per_epoch: bool = False  # one epoch of several: nested in an epoch loop or an *epoch* function
    skips_sync: bool = False  # a no_sync()/no_backward_sync()/accumulate() context inside the loop
    callees: frozenset[str] = frozenset()  # last names of every call inside the loop without a role of its own
    cadence_names: frozenset[str] = frozenset()  # drive an update-counted cadence (model/cadence.py)
    update_only: bool = False  # a function that updates but runs no backward (model/update_scope.py)

    @property
    def span(self) -> Span:
        return self.unit.span(self.root)

    @property
    def accumulating(self) -> bool:
        """Whether gradients of several backward calls add up before one update."""
        return self.shape is not Shape.PLAIN and any(
            e.role is Role.BACKWARD and e.place is Place.MICRO for e in self.events
        )

    @property
    def primary_gate(self) -> Gate | None:
        """The gate that holds the optimizer step, else the first gate."""
        for gate in self.gates:
            if any(e.role is Role.STEP and e.inside(gate.node) for e in self.events):
                return gate
        return self.gates[0] if self.gates else None

    @property
    def single_unit(self) -> bool:
        """Whether every event lives in the loop's own unit (no followed helper calls)."""
        return all(e.unit is self.unit for e in self.events)

    @property
    def sync_controlled(self) -> bool:
        """The loop manages DDP's all-reduce itself: a ``no_sync()``-style context (around the
        forward, where DDP decides, or the backward), or nanoGPT's
        ``model.require_backward_grad_sync = ...``."""
        return self.skips_sync or any(e.role is Role.SYNC_TOGGLE for e in self.events)

    def flows(self, first: Event, second: Event) -> bool:
        """Whether ``first`` runs before ``second`` in the same pass through the iteration:
        earlier in source, not in the other branch of an ``if``, and not in a block that
        leaves the iteration (``break``, ``continue``, ``return``, ``raise``) before ``second``."""
        if first.order >= second.order or self.exclusive(first, second):
            return False
        return not any(
            isinstance(block, cst.IndentedBlock) and not second.inside(block) and _leaves(block)
            and not self._returns_from_helper(block, first, second)
            for block in first.ancestors
        )

    def _returns_from_helper(self, block: cst.IndentedBlock, first: Event, second: Event) -> bool:
        """A block of a followed helper that ends with ``return``: it leaves the helper, not the
        iteration, so it skips only the helper's later statements."""
        last = block.body[-1]
        if not (isinstance(last, cst.SimpleStatementLine) and isinstance(last.body[-1], cst.Return)):
            return False
        chain = first.ancestors
        index = next(i for i, node in enumerate(chain) if node is block)
        function = next((node for node in reversed(chain[:index]) if isinstance(node, cst.FunctionDef)), None)
        if function is None or function is self.unit.root:
            return False
        return not second.inside(function)

    @staticmethod
    def exclusive(first: Event, second: Event) -> bool:
        """Whether two events sit in different branches of one ``if``/``else``, or of two ``if``
        statements with the same test (never both run in one pass)."""
        ifs_b = [node for node in second.ancestors if isinstance(node, cst.If)]
        for node in first.ancestors:
            if not isinstance(node, cst.If):
                continue
            side_a = branch_of(first, node)
            for other in ifs_b:
                if other is not node and not other.test.deep_equals(node.test):
                    continue  # one `if`, or two testing the same condition (`if scaler:` twice)
                side_b = branch_of(second, other)
                if side_a is not None and side_b is not None and side_a != side_b:
                    return True
        return False

    def of(self, *roles: Role) -> list[Event]:
        """Events with one of ``roles``, in source order."""
        return [e for e in self.events if e.role in roles]

    def reassigns(self, name: str) -> bool:
        """Whether the loop body assigns ``name`` (a per-window divisor, not a fixed one)."""
        span = self.span
        return any(span.line <= line <= span.end_line for line, _ in self.unit.assignments.get(name, []))

    def rebuilds(self, name: str) -> bool:
        """Whether the loop body assigns ``name`` a new object (``opt = torch.optim.SGD([x])``),
        not another name for one it has (``optimizer = self.optimizer``, ``opt = opts["d"]``)."""
        span = self.span
        return any(span.line <= line <= span.end_line and not isinstance(value, (cst.Name, cst.Attribute, cst.Subscript))
                   for line, value in self.unit.assignments.get(name, []))

    def accelerate_skips(self, event: Event) -> bool:
        """Under Accelerate's ``accumulate()``, a prepared optimizer's ``step``, its
        ``zero_grad`` after backward, and a prepared scheduler's ``step`` do nothing until
        the boundary, wherever they stand in the iteration."""
        if self.shape is not Shape.ACCELERATE or event.kind not in (Kind.OPTIMIZER, Kind.SCHEDULER):
            return False
        if event.role is Role.ZERO_GRAD:
            return any(self.flows(b, event) for b in self.of(Role.BACKWARD) if self.in_accumulate(b))
        return True

    def in_accumulate(self, event: Event) -> cst.With | None:
        """The ``accelerator.accumulate`` block around ``event``, if any."""
        for block in self.accumulate_blocks:
            if event.inside(block):
                return block
        return None

    def accumulating_accelerator(self, event: Event) -> str | None:
        """The accelerator whose ``accumulate()`` block holds ``event``, as written."""
        block = self.in_accumulate(event)
        for item in block.items if block is not None else ():
            call = item.item
            if isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) and call.func.attr.value == "accumulate":
                return dotted(call.func.value)
        return None

    @cached_property
    def calls_zeroing(self) -> bool:
        """The loop calls a function that may zero the gradients (named for it, or one of the
        module's functions that does; ``torch.zeros`` makes a tensor, and a function of the module
        named for zeroing whose text names no gradient does not). The function the loop is
        written in is not one of them: a call of its name from inside is another object's
        method (``model.train()`` in a ``def train`` that zeroes before its loop)."""
        facts = self.unit.facts
        zeroing = facts.zeroing_functions - {self.unit.unit.name}
        named = facts.gradless_zeroers - zeroing  # `self.zero_losses()`: the module's own, naming no gradient
        return any(("zero" in name and name not in _TENSOR_FACTORIES and name not in named) or name in zeroing
                   for name in self.callees)

    def factor_code(self) -> str | None:
        """The accumulation factor N as source text, when the loop shows it."""
        return self.unit.text_of(self.factor) if self.factor is not None else None


_TENSOR_FACTORIES = frozenset({"zeros", "zeros_like", "new_zeros"})
"""Calls named for zero that make a tensor (``torch.zeros(n)``), not zero gradients."""


def _calls_in(node: cst.CSTNode) -> list[cst.Call]:
    """Every call inside ``node`` (``node`` itself included)."""
    found: list[cst.Call] = []

    class _Calls(cst.CSTVisitor):
        def visit_Call(self, call: cst.Call) -> None:
            found.append(call)

    node.visit(_Calls())
    return found


def _callee_name(call: cst.Call) -> str:
    """The last name of what ``call`` calls: ``scale`` for ``scaler.scale(loss)``."""
    func = call.func
    if isinstance(func, cst.Attribute):
        return func.attr.value
    return func.value if isinstance(func, cst.Name) else ""


def _leaves(block: cst.IndentedBlock) -> bool:
    """Whether a block ends by leaving the iteration."""
    last = block.body[-1] if block.body else None
    if isinstance(last, cst.SimpleStatementLine) and last.body:
        return isinstance(last.body[-1], (cst.Break, cst.Continue, cst.Return, cst.Raise))
    return False


def branch_of(event: Event, node: cst.If) -> int | None:
    """0 if ``event`` is in the body of ``node``, 1 if in its ``else``/``elif``, else None."""
    if event.inside(node.body):
        return 0
    if node.orelse is not None and event.inside(node.orelse):
        return 1
    return None
