"""GL404 sync-guard-misses-forward: a DDP sync guard that covers the backward but not the forward."""

from __future__ import annotations

import ast
from collections.abc import Iterator, Sequence

import libcst as cst

from gradlint.catalogue import CATALOGUE
from gradlint.diagnostics import Span
from gradlint.fixes import edits
from gradlint.fixes.layout import layout_of
from gradlint.fixes.regions import before
from gradlint.model.backward_helper_guards import late_guards
from gradlint.model.events import Event, Role, TrainingLoop
from gradlint.model.sync_guards import is_sync_guard
from gradlint.model.syntax import dotted, names_in
from gradlint.model.unit import UnitModel
from gradlint.project.context import ProjectContext
from gradlint.rules.base import Change, Finding, Invalid, ModuleRule, span_of
from gradlint.sync_facts import GUARD_ATTRS


class SyncGuardMissesForward(ModuleRule):
    """Read per loop (a guard in the loop, or in a helper it calls, after the loss was computed)
    and per module (a helper that receives the loss and guards only its backward)."""

    info = CATALOGUE["GL404"]
    words = tuple(sorted(GUARD_ATTRS))

    def check_module(self, tree: ast.Module, lines: list[str], loops: Sequence[TrainingLoop] = (),
                     project: ProjectContext | None = None) -> Iterator[Finding]:
        in_loops = {backward.unit.span(guard).line for loop in loops
                    for backward, guard, _ in _late_guards(loop) if backward.unit.home is None}
        for found in late_guards(tree):
            if found.guard.lineno in in_loops:
                continue  # reported with the loop that runs it
            start, end = span_of(found.guard, lines), span_of(found.guard.items[-1].context_expr, lines)
            yield Finding(Span(start.line, start.column, end.end_line, end.end_column),
                          f"this sync guard misses the forward (`{found.parameter}` was computed by the caller); "
                          "guard the forward too", detail="DDP decides during the forward whether the next backward "
                          f"all-reduces, so entering no_sync() in {found.function.name}() after the caller's forward "
                          "still synchronises every micro-batch; enter it around the forward in the caller.")

    def check(self, loop: TrainingLoop) -> Iterator[Finding]:
        for backward, guard, forward in _late_guards(loop):
            unit = backward.unit
            start, end = unit.span(guard), unit.span(guard.items[-1])
            yield Finding(Span(start.line, start.column, end.end_line, end.end_column),
                          f"this sync guard misses the forward (line {unit.span(forward).line}); run the forward "
                          "inside the guard too", self.fix(_move_forward, loop, guard, forward),
                          detail="DDP decides during the forward whether the next backward all-reduces, so with "
                          "the loss computed before the guard every micro-batch still synchronises.")
        for toggle in loop.of(Role.SYNC_TOGGLE):
            flagged = _forward_before_toggle(loop, toggle)
            if flagged is not None:
                yield Finding(toggle.span, "`require_backward_grad_sync` is assigned after the forward (line "
                              f"{loop.unit.span(flagged).line}); set it before the forward",
                              detail="DDP reads the flag during the forward pass it should control.")

    VALID = (
        """\
def train(model, loader, optimizer, accum_steps):
    model = DistributedDataParallel(model)
    for step, (x, y) in enumerate(loader):
        if (step + 1) % accum_steps != 0:
            with model.no_sync():
                loss = model(x, y) / accum_steps
                loss.backward()
            continue
        loss = model(x, y) / accum_steps
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
""",
        """\
def train(model, get_batch, optimizer, num_updates, accum_steps):
    for update in range(num_updates):
        for micro_step in range(accum_steps):
            model.require_backward_grad_sync = micro_step == accum_steps - 1
            x, y = get_batch()
            logits, loss = model(x, y)
            (loss / accum_steps).backward()
        optimizer.step()
        optimizer.zero_grad()
""",
        """\
def backward(model, loss, accum_steps):
    with model.no_sync():
        (loss / accum_steps).backward()


def window(model, batches, optimizer, accum_steps):
    for x, y in batches[:-1]:
        with model.no_sync():
            backward(model, model(x, y), accum_steps)
    x, y = batches[-1]
    (model(x, y) / accum_steps).backward()
    optimizer.step()
    optimizer.zero_grad()
""",
    )
    INVALID = (
        Invalid("""\
def train(model, loader, optimizer, accum_steps):
    model = DistributedDataParallel(model)
    for step, (x, y) in enumerate(loader):
        loss = model(x, y) / accum_steps
        with model.no_sync():
            loss.backward()
        if (step + 1) % accum_steps == 0:
            optimizer.step()
            optimizer.zero_grad()
""", ((5, "GL404"),), fixed="""\
def train(model, loader, optimizer, accum_steps):
    model = DistributedDataParallel(model)
    for step, (x, y) in enumerate(loader):
        with model.no_sync():
            loss = model(x, y) / accum_steps
            loss.backward()
        if (step + 1) % accum_steps == 0:
            optimizer.step()
            optimizer.zero_grad()
"""),
        Invalid("""\
def train(model, get_batch, optimizer, num_updates, accum_steps):
    for update in range(num_updates):
        for micro_step in range(accum_steps):
            x, y = get_batch()
            logits, loss = model(x, y)
            model.require_backward_grad_sync = micro_step == accum_steps - 1
            (loss / accum_steps).backward()
        optimizer.step()
        optimizer.zero_grad()
""", ((6, "GL404"),)),
        Invalid("""\
class Agent:
    def backward(self, loss):
        self.pending = (self.pending + 1) % self.update_freq
        if self.pending != 0:
            with self.model.no_sync():
                (loss / self.update_freq).backward()
            return
        (loss / self.update_freq).backward()
""", ((5, "GL404"),)),
    )


def _late_guards(loop: TrainingLoop) -> Iterator[tuple[Event, cst.With, cst.CSTNode]]:
    """Each sync guard around a backward of an accumulating loop (or of a helper it calls) that
    the loss was computed before, once: the backward, the guard and the forward statement."""
    if not loop.accumulating:
        return
    reported: set[int] = set()
    for backward in loop.of(Role.BACKWARD):
        unit = backward.unit
        scope = loop.root if unit is loop.unit else unit.root
        guard = guard_of(unit, scope, backward)
        if guard is None or id(guard) in reported:
            continue
        forward = _forward_outside(unit, scope, backward, guard)
        if forward is not None:
            reported.add(id(guard))
            yield backward, guard, forward


def guard_of(unit: UnitModel, scope: cst.CSTNode, event: Event) -> cst.With | None:
    """The innermost ``with model.no_sync():`` (or ``fabric.no_backward_sync(...)``, or a context
    variable bound to one) inside the loop around ``event``."""
    for node in reversed(event.ancestors):
        if node is scope:
            return None
        if isinstance(node, cst.With) and any(is_guard(unit, item.item) for item in node.items):
            return node
    return None


def is_guard(unit: UnitModel, expr: cst.BaseExpression) -> bool:
    """``x.no_sync()``, either arm of ``x.no_sync() if ddp else nullcontext()``, a helper that
    wraps one, or a name every value of which is one."""
    return is_sync_guard(unit, expr, certain=True)


def _forward_outside(unit: UnitModel, scope: cst.CSTNode, backward: Event, guard: cst.With) -> cst.CSTNode | None:
    """The statement, before ``guard`` in the same iteration, that computes the loss the
    guarded backward differentiates, when nothing inside the guard recomputes it."""
    guard_span = unit.span(guard)
    scope_line = unit.span(scope).line
    loss = backward.unscaled_loss
    if loss is None or _computes_inline(loss):
        return None
    statement = None
    for name in names_in(loss):
        found = _forward_of(unit, scope, name, backward)
        if found is None:
            continue
        line = unit.span(found).line
        if line >= guard_span.line or line <= scope_line:
            return None
        statement = found
    return statement


def _computes_inline(loss: cst.BaseExpression) -> bool:
    """Whether the backward's own expression runs the forward (``(F.cross_entropy(model(x), y)
    / N).backward()``): a call with arguments in it, not ``loss.mean()``."""
    found: list[cst.Call] = []

    class _Calls(cst.CSTVisitor):
        def visit_Call(self, call: cst.Call) -> None:
            if call.args:
                found.append(call)

    loss.visit(_Calls())
    return bool(found)


def _forward_of(unit: UnitModel, scope: cst.CSTNode, name: str, backward: Event) -> cst.SimpleStatementLine | None:
    """The last statement before ``backward`` that computes ``name`` with a call (the forward;
    ``loss = loss / N`` is passed over)."""
    assigned = sorted((pair for pair in _assignments(unit, scope, name) if pair[0] < backward.span.line),
                      key=lambda p: p[0])
    return next((s for _, s in reversed(assigned) if "(" in unit.text_of(s)), None)


def _assignments(unit: UnitModel, scope: cst.CSTNode, name: str) -> list[tuple[int, cst.SimpleStatementLine]]:
    """Where ``scope`` assigns ``name`` (also as an element of a tuple target): the line and
    the statement line of each assignment."""
    found: list[tuple[int, cst.SimpleStatementLine]] = []

    class _Assigns(cst.CSTVisitor):
        def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
            for small in node.body:
                targets = [t.target for t in small.targets] if isinstance(small, cst.Assign) else (
                    [small.target] if isinstance(small, (cst.AnnAssign, cst.AugAssign)) else [])
                for target in targets:
                    elements = [e.value for e in target.elements] if isinstance(target, (cst.Tuple, cst.List)) else [target]
                    if any(dotted(e) == name for e in elements):
                        found.append((unit.span(node).line, node))

    scope.visit(_Assigns())
    return found


def _forward_before_toggle(loop: TrainingLoop, toggle: Event) -> cst.CSTNode | None:
    """The forward of the backward that follows a ``require_backward_grad_sync`` assignment,
    when it was computed after the iteration began and before the assignment."""
    following = [b for b in loop.of(Role.BACKWARD) if loop.flows(toggle, b)]
    if not following or toggle.unit is not loop.unit or following[0].unit is not loop.unit:
        return None
    backward = following[0]
    loss = backward.unscaled_loss
    for name in names_in(loss) if loss is not None else set():
        statement = _forward_of(loop.unit, loop.root, name, backward)
        if statement is not None:
            line = loop.unit.span(statement).line
            return statement if loop.span.line < line < toggle.span.line else None
    return None


def _move_forward(loop: TrainingLoop, guard: cst.With, forward: cst.CSTNode) -> Change | None:
    """Move the forward into the guard when it is the statement just before it (unsafe: the
    forward may have side effects the code after the guard relies on being outside it)."""
    layout = layout_of(loop.unit)
    block = layout.block_of(guard)
    if block is None or layout.block_of(forward) is not block or not isinstance(guard.body, cst.IndentedBlock):
        return None
    index = next(i for i, s in enumerate(block.body) if s is guard)
    if index == 0 or block.body[index - 1] is not forward:
        return None
    spot = before(layout, guard.body.body[0], guard.body)
    moved = edits.move_statements(loop, [forward], spot, ())
    return Change("Move the forward into the sync guard", moved) if moved else None
