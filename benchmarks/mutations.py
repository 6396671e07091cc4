"""Defect injection for the mutation harness: each kind rewrites one correct loop,
located by its labelled anchors, into a copy with exactly one catalogue defect.

Statements are found with ``ast`` (the outermost statement starting on an anchor's line)
and moved or deleted whole, re-indented to their destination block.  A statement that
leaves its block empty is replaced by ``pass``.  Every line keeps the number it had in
the original, so findings can be compared across the edit.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from gradlint.names import CLIP_FUNCTIONS, kind_by_name
from gradlint.names import Kind as ObjectKind

Anchors = Mapping[str, int | None]


class NotApplicable(Exception):
    """The mutation kind does not apply to this loop; the message says why."""


@dataclass(frozen=True)
class Mutant:
    """One mutated copy of a file."""

    kind: str
    code: str
    text: str
    expected_line: int
    """The line of the mutant where ``code`` must be reported."""
    line_map: Mapping[int, int]
    """Original line -> mutant line, for every line the mutant keeps."""
    also: frozenset[int] = frozenset()
    """Other lines of the mutant where ``code`` is the same defect (another backward call of
    the loss whose division was dropped, on the other branch of an ``if``)."""


Row = list[Any]
"""[original line number or None, the line's text with its newline]"""


@dataclass
class _Span:
    """A source range in ``ast`` coordinates (1-based lines, UTF-8 byte columns)."""

    lineno: int
    col_offset: int
    end_lineno: int
    end_col_offset: int

    @classmethod
    def of(cls, node: ast.expr) -> _Span:
        return cls(node.lineno, node.col_offset, node.end_lineno or node.lineno,
                   node.end_col_offset or 0)


def _indent(text: str) -> str:
    return text[: len(text) - len(text.lstrip(" \t"))]


class _Source:
    """A file being mutated: its tree and lines tagged with their original numbers."""

    def __init__(self, text: str, loop: tuple[int, int] = (1, 0)) -> None:
        self.tree = ast.parse(text)
        self.loop = loop
        """The loop's first and last lines (original numbers)."""
        self.code: str | None = None
        """The code the mutant must get when it is not its kind's (set by the rewrite)."""
        self.also: set[int] = set()
        """Other original lines where the code is the same defect (set by the rewrite)."""
        self.rows: list[Row] = [[i + 1, line] for i, line in enumerate(text.splitlines(True))]
        if self.rows and not self.rows[-1][1].endswith("\n"):
            self.rows[-1][1] += "\n"
        self.parents: dict[ast.AST, ast.AST] = {}
        for node in ast.walk(self.tree):
            for child in ast.iter_child_nodes(node):
                self.parents[child] = node

    def statement(self, line: int | None, anchor: str) -> ast.stmt:
        """The outermost statement starting on ``line``, alone on its lines."""
        if line is None:
            raise NotApplicable(f"no {anchor} anchor")
        found = [n for n in ast.walk(self.tree) if isinstance(n, ast.stmt) and n.lineno == line]
        if not found:
            raise NotApplicable(f"no statement starts on line {line} ({anchor})")
        stmt = max(found, key=lambda n: (n.end_lineno or n.lineno) - n.lineno)
        first = self.rows[self._index(stmt.lineno)][1]
        last = self.rows[self._index(stmt.end_lineno or stmt.lineno)][1]
        before = first.encode()[: stmt.col_offset].decode(errors="replace")
        after = last.encode()[stmt.end_col_offset or 0:].decode(errors="replace").strip()
        if before.strip() or (after and not after.startswith("#")):
            raise NotApplicable(f"the {anchor} statement on line {line} shares its line")
        return stmt

    def _index(self, tag: int) -> int:
        for i, (t, _) in enumerate(self.rows):
            if t == tag:
                return i
        raise NotApplicable(f"line {tag} is gone")

    def _span(self, stmt: ast.stmt) -> tuple[int, int]:
        """Row indices [start, end) of ``stmt``."""
        return self._index(stmt.lineno), self._index(stmt.end_lineno or stmt.lineno) + 1

    def _sole(self, stmt: ast.stmt) -> bool:
        """Whether ``stmt`` is the only statement of its block."""
        parent = self.parents.get(stmt)
        for name in ("body", "orelse", "finalbody"):
            block = getattr(parent, name, None)
            if isinstance(block, list) and stmt in block:
                return len(block) == 1
        return False

    def remove(self, stmt: ast.stmt) -> list[Row]:
        """Take ``stmt``'s lines out (``pass`` in their place if the block empties)."""
        start, end = self._span(stmt)
        taken = self.rows[start:end]
        filler: list[Row] = [[None, _indent(taken[0][1]) + "pass\n"]] if self._sole(stmt) else []
        self.rows[start:end] = filler
        return taken

    def insert(self, rows: list[Row], anchor: ast.stmt, *, after: bool) -> None:
        """Insert ``rows`` just after (or before) ``anchor``, re-indented to its block."""
        start, end = self._span(anchor)
        dest = _indent(self.rows[start][1])
        src = _indent(rows[0][1])
        moved = [[t, dest + line[len(src):] if line.startswith(src) and line.strip() else line]
                 for t, line in rows]
        at = end if after else start
        self.rows[at:at] = moved

    def move(self, stmt: ast.stmt, anchor: ast.stmt, *, after: bool) -> None:
        """Move ``stmt`` next to ``anchor``."""
        if _inside(anchor, stmt) or _inside(stmt, anchor):
            raise NotApplicable("the statement to move holds its destination")
        self.insert(self.remove(stmt), anchor, after=after)

    def replace(self, span: _Span, text: str) -> None:
        """Replace the source in ``span`` with ``text``."""
        first, last = self._index(span.lineno), self._index(span.end_lineno)
        head = self.rows[first][1].encode()[: span.col_offset].decode()
        tail = self.rows[last][1].encode()[span.end_col_offset:].decode()
        self.rows[first][1] = head + text + tail
        del self.rows[first + 1: last + 1]

    def segment(self, node: ast.AST) -> str:
        """The original source of ``node``."""
        text = "".join(line for _, line in self.rows)
        return ast.get_source_segment(text, node) or ""

    def extent(self, node: ast.expr) -> _Span:
        """``node``'s span, with its grouping parentheses if it has some (not a call's)."""
        span = _Span.of(node)
        parent = self.parents.get(node)
        if isinstance(parent, ast.Call) and node in parent.args:
            return span
        line = self.rows[self._index(span.lineno)][1].encode()
        end_line = self.rows[self._index(span.end_lineno)][1].encode()
        col, end = span.col_offset, span.end_col_offset
        if col > 0 and line[col - 1:col] == b"(" and end_line[end:end + 1] == b")":
            return _Span(span.lineno, col - 1, span.end_lineno, end + 1)
        return span

    def result(self, kind: str, code: str, expected_tag: int | None) -> Mutant:
        text = "".join(line for _, line in self.rows)
        line_map = {t: i + 1 for i, (t, _) in enumerate(self.rows) if t is not None}
        if expected_tag is None or expected_tag not in line_map:
            raise NotApplicable("the expected line is gone")
        also = frozenset(line_map[t] for t in self.also if t in line_map and t != expected_tag)
        return Mutant(kind, code, text, line_map[expected_tag], line_map, also)


def _inside(node: ast.AST, outer: ast.AST) -> bool:
    return node is not outer and any(n is node for n in ast.walk(outer))


def _divisions(node: ast.AST) -> list[ast.BinOp]:
    return [n for n in ast.walk(node) if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Div)]


# --- the mutation kinds -------------------------------------------------------------------

_UPDATE_ANCHORS = ("clip", "step", "scheduler", "zero_grad", "unscale")


def _alone(stmt: ast.stmt, anchor: str, a: Anchors) -> None:
    """Raise NotApplicable when ``stmt`` (the ``anchor`` statement) is also another update
    anchor's statement (``self._step(...)`` that clips, steps and schedules): moving it would
    inject several defects at once."""
    for other in _UPDATE_ANCHORS:
        line = a.get(other)
        if other != anchor and line is not None and stmt.lineno <= line <= (stmt.end_lineno or stmt.lineno):
            raise NotApplicable(f"the {anchor} statement also holds the {other} anchor")


def _helper_alone(src: _Source, stmt: ast.stmt, anchor: str) -> None:
    """Raise NotApplicable when a function of the module that ``stmt`` calls by its own name or
    as ``self``'s method (not the function holding ``stmt``) also holds another update call:
    ``self.update_with_accumulated_grad()``, the step anchor, whose body clips and steps. Moving
    the statement moves that call with it, injecting several defects at once."""
    names = {_name_of(c.func) for c in ast.walk(stmt) if isinstance(c, ast.Call) and _reference(c.func)}
    around = _ancestors(src, stmt)
    helpers = [f for f in ast.walk(src.tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
               and f.name in names and f not in around]
    for node in (n for helper in helpers for n in ast.walk(helper)):
        kind = _update_call(node)
        if kind is not None and kind != anchor:
            raise NotApplicable(f"a helper the {anchor} statement calls also holds a {kind} call")


_CLIP_NAME = re.compile(r"^clip_\w*grad|^grad(ient)?s?_clip")
"""A clipping function's or method's name, as gradlint reads one (``clip_l2_grad_norm_``)."""


def _update_call(node: ast.AST) -> str | None:
    """The update anchor kind of a call: ``clip``, ``zero_grad``, ``unscale``, or ``step`` (an
    optimizer's, by its receiver's name); None for any other node."""
    if _zeroings(node) == [node]:
        return "zero_grad"
    if not isinstance(node, ast.Call):
        return None
    name = _name_of(node.func) or ""
    if name in CLIP_FUNCTIONS or _CLIP_NAME.search(name):
        return "clip"
    if name == "unscale_":
        return "unscale"
    if name == "step" and isinstance(node.func, ast.Attribute) and _optimizer(ast.unparse(node.func.value)):
        return "step"
    return None


def _window_in_helper(src: _Source, backward: ast.stmt) -> bool:
    """Whether the backward statement calls a function of the module whose own loop holds the
    backward (``self.train_batch(batch)`` running the micro-batch loop): next to that call is
    after the window, not in it."""
    lines = helper_lines("".join(line for _, line in src.rows), backward.lineno, depth=1)
    loops = [n for n in ast.walk(src.tree) if isinstance(n, (ast.For, ast.While)) and n.lineno in lines]
    return any(isinstance(c, ast.Attribute) and c.attr == "backward" for loop in loops for c in ast.walk(loop))


def _into_micro(anchor: str) -> Callable[[_Source, Anchors], int]:
    def mutate(src: _Source, a: Anchors) -> int:
        stmt = src.statement(a.get(anchor), anchor)
        _alone(stmt, anchor, a)
        _helper_alone(src, stmt, anchor)
        backward = src.statement(a.get("backward"), "backward")
        if _window_in_helper(src, backward) or _calls_micro_loop(src, backward):
            raise NotApplicable("the backward anchor calls a helper holding the whole micro-batch loop: "
                                "a statement moved after it stays at the boundary")
        if anchor == "zero_grad" and _accumulate_block(src, backward) and _optimizer(_receiver(_zeroings(stmt)[0])
                                                                             if _zeroings(stmt) else None):
            src.code = "GL305"  # Accelerate skips it until the boundary, where it runs between backward and step
        clip = _skipped_step_passes_clip(src, a, stmt, backward) if anchor == "step" else None
        src.move(stmt, backward, after=True)
        return stmt.lineno if clip is None else clip
    return mutate


def _skipped_step_passes_clip(src: _Source, a: Anchors, step: ast.stmt, backward: ast.stmt) -> int | None:
    """For a prepared optimizer's step inside ``accelerator.accumulate()`` (Accelerate skips it
    until the boundary, wherever it stands): the line of the clip call it now precedes (GL301
    there, ``src.code`` set). NotApplicable when no clip stands between the backward and the
    step: moved, the step still runs once per update, after the same work."""
    if not _accumulate_block(src, backward) or not any(
            isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute) and c.func.attr == "step"
            and _optimizer(ast.unparse(c.func.value)) for c in ast.walk(step)):
        return None
    line = a.get("clip")
    clip = src.statement(line, "clip") if line is not None and backward.lineno < line < step.lineno else None
    calls = [c for c in ast.walk(clip) if isinstance(c, ast.Call) and "clip" in ast.unparse(c.func)] if clip else []
    if not calls:
        raise NotApplicable("Accelerate holds a prepared optimizer's step inside accumulate() until the boundary: "
                            "moved after the backward it changes nothing")
    src.code = "GL301"
    return min(c.lineno for c in calls)


def _accumulate_block(src: _Source, stmt: ast.stmt) -> bool:
    """Whether ``stmt`` is inside ``with <accelerator>.accumulate(...):``."""
    return any(isinstance(node, (ast.With, ast.AsyncWith)) and any(
        isinstance(item.context_expr, ast.Call) and isinstance(item.context_expr.func, ast.Attribute)
        and item.context_expr.func.attr == "accumulate" for item in node.items) for node in _ancestors(src, stmt))


def _calls_micro_loop(src: _Source, stmt: ast.stmt) -> bool:
    """Whether ``stmt`` calls (by name, ``self.f(...)`` or ``f(...)``) a function of the module
    whose body runs a backward inside a loop: the micro-batch loop is in that helper."""
    names = {c.func.attr if isinstance(c.func, ast.Attribute) else c.func.id
             for c in ast.walk(stmt) if isinstance(c, ast.Call) and isinstance(c.func, (ast.Attribute, ast.Name))}
    if "backward" in names:
        return False
    return any(isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)) and f.name in names and any(
        isinstance(loop, (ast.For, ast.While)) and any(
            isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute) and c.func.attr == "backward"
            for c in ast.walk(loop))
        for loop in ast.walk(f)) for f in ast.walk(src.tree))


def _clip_after_step(src: _Source, a: Anchors) -> int:
    clip = src.statement(a.get("clip"), "clip")
    src.move(clip, src.statement(a.get("step"), "step"), after=True)
    return clip.lineno


def _scheduler_before_step(src: _Source, a: Anchors) -> int:
    sched = src.statement(a.get("scheduler"), "scheduler")
    step = src.statement(a.get("step"), "step")
    if sched.lineno < step.lineno:
        raise NotApplicable("the scheduler already comes before the step (a protocol of its own)")
    src.move(sched, step, after=False)
    return sched.lineno


def _unscale_after_clip(src: _Source, a: Anchors) -> int:
    clip = src.statement(a.get("clip"), "clip")
    unscale = src.statement(a.get("unscale"), "unscale")
    if _clip_in_another_arm(src, clip, unscale):
        raise NotApplicable("another branch clips too: the moved unscale would leave it unscaled as well (two defects)")
    src.move(unscale, clip, after=True)
    return clip.lineno


def _clip_in_another_arm(src: _Source, clip: ast.stmt, unscale: ast.stmt) -> bool:
    """Whether ``clip`` sits in one arm of an ``if`` (inside the ``unscale``'s block) whose other
    arm clips too (``if fsdp: model.clip_grad_norm_(...)`` / ``else: clip_grad_norm_(...)``)."""
    child: ast.AST = clip
    node = src.parents.get(clip)
    while node is not None and not _inside(unscale, node) and node is not unscale:
        if isinstance(node, ast.If):
            arms = [node.body, node.orelse]
            other = [s for arm in arms if child not in arm for s in arm]
            if any(isinstance(c, ast.Call) and "clip" in (getattr(c.func, "attr", None) or getattr(c.func, "id", ""))
                   for s in other for c in ast.walk(s)):
                return True
        child, node = node, src.parents.get(node)
    return False


def _zero_grad_before_step(src: _Source, a: Anchors) -> int:
    zero = src.statement(a.get("zero_grad"), "zero_grad")
    _apart_from_backward(zero, a)
    step = src.statement(a.get("step"), "step")
    if _next_statement(src, zero) is step:
        raise NotApplicable("zero_grad is already just before the step")
    src.move(zero, step, after=False)
    return zero.lineno


def _apart_from_backward(zero: ast.stmt, a: Anchors) -> None:
    """Raise NotApplicable when the zero_grad statement also holds the backward anchor (a
    helper that zeroes on the window's first call and backpropagates, ``self.accumulate_grad()``):
    deleting or moving it takes the backward with it, not one zeroing defect."""
    line = a.get("backward")
    if line is not None and zero.lineno <= line <= (zero.end_lineno or zero.lineno):
        raise NotApplicable("the zero_grad statement also holds the backward anchor")


def _next_statement(src: _Source, stmt: ast.stmt) -> ast.stmt | None:
    parent = src.parents.get(stmt)
    for name in ("body", "orelse", "finalbody"):
        block = getattr(parent, name, None)
        if isinstance(block, list) and stmt in block:
            i = block.index(stmt)
            return block[i + 1] if i + 1 < len(block) else None
    return None


def _drop_zero_grad(src: _Source, a: Anchors) -> int:
    """Delete the update's zeroing: the anchored statement, or the ``if`` whose branches are
    all zeroings of it (``if fused: opt.zero_grad() else: opt.zero_grad(set_to_none=True)``).
    Not applicable when another zeroing of the same gradients remains on its path in the loop
    (the deleted one was redundant: no defect), nor to a loop without a backward (a step-only
    boundary function, whose caller runs the backward: GL304 is a loop running both)."""
    if a.get("backward") is None:
        raise NotApplicable("no backward in the loop: a step-only boundary function (GL304 is a loop running both)")
    step = src.statement(a.get("step"), "step")
    zero = src.statement(a.get("zero_grad"), "zero_grad")
    _apart_from_backward(zero, a)
    parent = src.parents.get(zero)
    while isinstance(parent, ast.If) and _only_zeroing(parent):
        zero, parent = parent, src.parents.get(parent)
    gone = _zeroings(zero)
    kept = [z for z in _zeroings(src.tree) if src.loop[0] <= z.lineno <= src.loop[1] and z not in gone]
    if any(_same_gradients(g, k) and _same_path(src, g, k) for g in gone for k in kept):
        raise NotApplicable("another zeroing of the same gradients remains in the loop")
    src.remove(zero)
    return step.lineno


def _zeroings(node: ast.AST) -> list[ast.AST]:
    """The zeroing calls and statements in ``node``: ``x.zero_grad(...)``, ``x.grad.zero_()``,
    ``x.grad = None``."""
    found: list[ast.AST] = []
    for n in ast.walk(node):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and (
                n.func.attr == "zero_grad" or (n.func.attr == "zero_" and _grad(n.func.value))):
            found.append(n)
        elif isinstance(n, ast.Assign) and any(isinstance(t, ast.Attribute) and t.attr == "grad" for t in n.targets) \
                and isinstance(n.value, ast.Constant) and n.value.value is None:
            found.append(n)
    return found


def _grad(node: ast.expr) -> bool:
    while isinstance(node, ast.Attribute) and node.attr == "data":
        node = node.value
    return isinstance(node, ast.Attribute) and node.attr == "grad"


def _only_zeroing(node: ast.If) -> bool:
    """Every branch of ``node`` (an ``else`` included, ``elif`` chains followed) holds nothing
    but zeroings."""
    if not node.orelse or not _zeroing_block(node.body):
        return False
    rest = node.orelse
    if len(rest) == 1 and isinstance(rest[0], ast.If):
        return _only_zeroing(rest[0])
    return _zeroing_block(rest)


def _zeroing_block(block: list[ast.stmt]) -> bool:
    """Every statement is one zeroing: a call, ``p.grad = None``, or a loop of these over the
    parameters (``for p in model.parameters(): p.grad = None``)."""
    return all(isinstance(s, (ast.Expr, ast.Assign)) and len(_zeroings(s)) == 1
               or isinstance(s, ast.For) and not s.orelse and _zeroing_block(s.body) for s in block)


def _receiver(node: ast.AST) -> str | None:
    """``opt`` for ``opt.zero_grad()``; None for a zeroing of parameters' ``.grad``."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "zero_grad":
        return ast.unparse(node.func.value)
    return None


def _same_gradients(gone: ast.AST, kept: ast.AST) -> bool:
    """Whether zeroing ``kept`` clears what ``gone`` cleared: the same receiver, or either is
    not an optimizer's (a model's ``zero_grad``, ``p.grad = None``: perhaps every parameter).
    Two different optimizers' ``zero_grad`` clear different gradients (a GAN's G and D)."""
    a, b = _receiver(gone), _receiver(kept)
    return a == b or not (_optimizer(a) and _optimizer(b))


def _same_path(src: _Source, gone: ast.AST, kept: ast.AST) -> bool:
    """Whether ``kept`` may run when ``gone`` did: not in the other branch of an ``if`` around
    ``gone``, nor in an ``except`` handler that ``gone`` is not in (it runs on failure only)."""
    around = _ancestors(src, gone)
    for node in _ancestors(src, kept):
        if isinstance(node, ast.ExceptHandler) and node not in around:
            return False
        if isinstance(node, ast.If) and node in around and _side(src, kept, node) != _side(src, gone, node):
            return False
    return True


def _ancestors(src: _Source, node: ast.AST) -> list[ast.AST]:
    found = []
    while node in src.parents:
        node = src.parents[node]
        found.append(node)
    return found


def _side(src: _Source, node: ast.AST, branch: ast.If) -> str:
    """``body`` or ``orelse``: the side of ``branch`` that holds ``node`` (or ``test``)."""
    chain = [node, *_ancestors(src, node)]
    child = chain[chain.index(branch) - 1]
    return "body" if child in branch.body else "orelse" if child in branch.orelse else "test"


def _optimizer(receiver: str | None) -> bool:
    return receiver is not None and kind_by_name(receiver) is ObjectKind.OPTIMIZER


def _drop_scaling(src: _Source, a: Anchors) -> int:
    backward = src.statement(a.get("backward"), "backward")
    line = a.get("scale")
    if line is not None and line != backward.lineno:
        scale = src.statement(line, "scale")
        target = scale.target if isinstance(scale, (ast.AugAssign, ast.AnnAssign)) else (
            scale.targets[0] if isinstance(scale, ast.Assign) and len(scale.targets) == 1 else None)
        if target is not None:
            src.also = _backpropagating(src, ast.unparse(target), scale)
        if isinstance(scale, ast.AugAssign) and isinstance(scale.op, ast.Div):
            src.remove(scale)
            return backward.lineno
        value = scale.value if isinstance(scale, (ast.Assign, ast.AnnAssign)) else None
        if not (isinstance(value, ast.BinOp) and isinstance(value.op, ast.Div)):
            raise NotApplicable(f"the scale statement on line {line} is not `x = expr / N`")
        division = value
    else:
        found = [d for d in _divisions(backward) if _backpropagated(src, d, backward)]
        if len(found) != 1:
            raise NotApplicable("no single `loss / N` backpropagated by the backward statement")
        division = found[0]
    src.replace(src.extent(division), src.segment(division.left))
    return backward.lineno


def _backpropagated(src: _Source, node: ast.expr, stmt: ast.stmt) -> bool:
    """Whether ``node`` of ``stmt`` is (inside) what a call is handed: an argument, or the
    receiver of a method (``(loss / n).backward()``, ``scaler.scale(loss / n)``), not the
    statement's own result (``return super().training_step(x) / world_size`` divides a loss
    the call already backpropagated: the logged value)."""
    while node is not stmt and node in src.parents:
        parent = src.parents[node]
        if isinstance(parent, ast.Call) and (node in parent.args or any(k.value is node for k in parent.keywords)):
            return True
        if isinstance(parent, ast.Attribute) and isinstance(src.parents.get(parent), ast.Call):
            return True
        node = parent  # type: ignore[assignment]
    return False


def _backpropagating(src: _Source, name: str, scale: ast.stmt) -> set[int]:
    """The lines of the loop's statements after ``scale`` that call a ``backward`` on ``name``
    (``scaler.scale(loss).backward()`` and ``loss.backward()`` on the two arms of an ``if``):
    dropping the division leaves each of them unscaled."""
    first, last = src.loop
    found = set()
    for node in ast.walk(src.tree):
        if not isinstance(node, ast.Expr) or not first <= node.lineno <= last or node.lineno <= scale.lineno:
            continue
        calls = [c for c in ast.walk(node) if isinstance(c, ast.Call)]
        if any(_calls_backward(c) for c in calls) and any(ast.unparse(n) == name for n in ast.walk(node)
                                                          if isinstance(n, (ast.Name, ast.Attribute))):
            found.add(node.lineno)
    return found


def _calls_backward(call: ast.Call) -> bool:
    func = call.func
    return (isinstance(func, ast.Attribute) and func.attr == "backward"
            or isinstance(func, ast.Name) and func.id == "backward")


def _drop_no_sync(src: _Source, a: Anchors) -> int:
    backward = src.statement(a.get("backward"), "backward")
    guard = src.statement(a.get("no_sync"), "no_sync")
    if isinstance(guard, (ast.Assign, ast.AugAssign)):
        targets = guard.targets if isinstance(guard, ast.Assign) else [guard.target]
        if not any(isinstance(t, ast.Attribute) and "sync" in t.attr for t in targets):
            raise NotApplicable("the no_sync anchor is an assignment but not a sync flag")
        src.remove(guard)
        return backward.lineno
    if not isinstance(guard, (ast.With, ast.AsyncWith)):
        raise NotApplicable("the no_sync anchor is neither a `with` nor a sync flag")
    if not _inside(backward, guard):
        raise NotApplicable("the backward is not inside the no_sync `with`")
    if len(guard.items) > 1:
        raise NotApplicable("the no_sync `with` has several items")
    body_first = guard.body[0].lineno
    if body_first == guard.lineno:
        raise NotApplicable("the no_sync `with` has its body on its own line")
    start, body_start = src._index(guard.lineno), src._index(body_first)
    end = src._index(guard.end_lineno or guard.lineno) + 1
    outer, inner = _indent(src.rows[start][1]), _indent(src.rows[body_start][1])
    for row in src.rows[body_start:end]:
        if row[1].startswith(inner) and row[1].strip():
            row[1] = outer + row[1][len(inner):]
    del src.rows[start:body_start]
    return backward.lineno


def _zero_based_gate(src: _Source, a: Anchors) -> int:
    gate = src.statement(a.get("gate"), "gate")
    if not isinstance(gate, (ast.If, ast.While)):
        raise NotApplicable("the gate is not an `if`")
    plus_ones = [
        n.left for n in ast.walk(gate.test)
        if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mod)
        and isinstance(n.left, ast.BinOp) and isinstance(n.left.op, ast.Add)
        and isinstance(n.left.right, ast.Constant) and n.left.right.value == 1
        and isinstance(src.parents.get(n), ast.Compare)
    ]
    if len(plus_ones) != 1:
        raise NotApplicable("no single `(i + 1) % N` in the gate")
    node = plus_ones[0]
    assert isinstance(node, ast.BinOp)
    src.replace(src.extent(node), src.segment(node.left))
    return gate.lineno


@dataclass(frozen=True)
class Kind:
    """A mutation kind: its name, the code it must trigger, and its rewrite."""

    name: str
    code: str
    micro_batch: bool
    """Applies only to loops that accumulate."""
    apply: Callable[[_Source, Anchors], int]
    """Rewrites the source; returns the original line where the code is expected."""


KINDS: tuple[Kind, ...] = (
    Kind("clip-into-micro-batch", "GL101", True, _into_micro("clip")),
    Kind("step-into-micro-batch", "GL102", True, _into_micro("step")),
    Kind("zero-grad-into-micro-batch", "GL103", True, _into_micro("zero_grad")),
    Kind("scheduler-into-micro-batch", "GL104", True, _into_micro("scheduler")),
    Kind("drop-scaling", "GL201", True, _drop_scaling),
    Kind("clip-after-step", "GL301", False, _clip_after_step),
    Kind("scheduler-before-step", "GL302", False, _scheduler_before_step),
    Kind("unscale-after-clip", "GL303", False, _unscale_after_clip),
    Kind("drop-zero-grad", "GL304", False, _drop_zero_grad),
    Kind("zero-grad-before-step", "GL305", False, _zero_grad_before_step),
    Kind("drop-no-sync", "GL402", True, _drop_no_sync),
    Kind("zero-based-gate", "GL403", True, _zero_based_gate),
)


def mutate(text: str, kind: Kind, anchors: Anchors, accumulates: bool,
           lines: tuple[int, int] = (1, 0)) -> Mutant:
    """The mutant of ``text`` for ``kind``; :class:`NotApplicable` when it does not apply.
    ``lines`` are the loop's first and last lines.

    The mutant may not parse: callers check it (``parses``)."""
    if kind.micro_batch and not accumulates:
        raise NotApplicable("the loop does not accumulate")
    try:
        src = _Source(text, lines)
    except (SyntaxError, ValueError):
        raise NotApplicable("the original does not parse") from None
    expected = kind.apply(src, anchors)
    mutant = src.result(kind.name, src.code or kind.code, expected)
    if mutant.text == text:
        raise NotApplicable("the rewrite changes nothing")
    return mutant


def parses(text: str) -> bool:
    """Whether ``text`` compiles (``ast.parse`` alone accepts a ``continue`` outside a loop)."""
    try:
        compile(text, "<mutant>", "exec", dont_inherit=True)
    except (SyntaxError, ValueError):
        return False
    return True


def helper_lines(text: str, line: int, depth: int = 3) -> frozenset[int]:
    """The lines of the module's functions that the statement starting on ``line`` calls (by
    name, ``self.clip_grads(...)`` or ``clip_grads(...)``, or hands to a call by name:
    ``self._with_events(self._step, 'step')``, which runs it), and of what they call, ``depth``
    calls deep. gradlint reports an event where its call is written, in the helper when a
    helper holds it, so a mutant that moves or deletes a call to a helper is reported there."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return frozenset()
    functions: dict[str, list[ast.AST]] = {}
    statements: list[ast.stmt] = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            functions.setdefault(node.name, []).append(node)
        if isinstance(node, ast.stmt) and node.lineno == line:
            statements.append(node)
    found: set[int] = set()
    todo: list[ast.AST] = statements[:1]
    for _ in range(depth):
        reached: list[ast.AST] = []
        for node in todo:
            for call in (n for n in ast.walk(node) if isinstance(n, ast.Call)):
                handed = [a for a in [*call.args, *(k.value for k in call.keywords)] if _reference(a)]
                for name in (_name_of(f) for f in [call.func, *handed]):
                    for function in functions.get(name or "", []):
                        span = range(function.lineno, (function.end_lineno or function.lineno) + 1)
                        if not found.issuperset(span):
                            found.update(span)
                            reached.append(function)
        todo = reached
    return frozenset(found)


def _reference(node: ast.expr) -> bool:
    """A function handed over by name: ``train_step`` or ``self._step``."""
    return isinstance(node, ast.Name) or (
        isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self")


def _name_of(node: ast.expr) -> str | None:
    """The last name of ``f`` / ``self.f`` (a function called or handed over by name)."""
    return node.attr if isinstance(node, ast.Attribute) else node.id if isinstance(node, ast.Name) else None
