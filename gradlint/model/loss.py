"""Follow the loss that reaches a backward call: is it scaled for accumulation, by what,
and where does it come from?

The trace follows simple assignments inside the unit, and a parameter of a followed helper back
to the argument its caller passes (``self.backward_step(loss / N)``: there only a division
counts). Its verdict
is ``SCALED`` when any division or multiplication (or a ``div``/``mul`` call) touches the
loss on its way, ``UNSCALED`` when the loss demonstrably comes straight from a model or
criterion, and ``UNKNOWN`` otherwise; rules act on definite verdicts only.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import Enum
from weakref import WeakKeyDictionary

import libcst as cst

from gradlint.model.node_memo import per_node
from gradlint.model.partials import through_partial
from gradlint.model.preorder import preorder
from gradlint.model.syntax import dotted, names_in, parameter_names
from gradlint.model.unit import UnitModel
from gradlint.names import Kind

_PASS_THROUGH = frozenset({"mean", "sum", "float", "double", "half", "to", "squeeze", "contiguous", "clone", "cuda"})
_DIVIDING_CALLS = frozenset({"div", "div_", "true_divide", "divide"})
_IN_PLACE = frozenset({"div_", "mul_"})
_MULTIPLYING_CALLS = frozenset({"mul", "mul_", "multiply"})
_SCALING_WORDS = ("accum", "num_items", "micro", "n_acc", "acc_steps", "grad_acc")
ACCUMULATION_WORDS = ("accum", "grad_acc", "gas", "micro")
"""Words of a name that make it the accumulation factor or the window's count (`grad_accum_steps`)."""
_TOKEN_COUNT_WORDS = ("token", "num_items", "valid", "numel", "ntok", "n_tok", "num_tgt", "mask")
_TOKEN_LOSSES = ("cross_entropy", "crossentropy", "nll_loss", "criterion", "loss_fn", "lm_loss")
_RESCALING_WORDS = (*_SCALING_WORDS, "scale", "inv", "factor", "num", "step", "size", "world", "count", "len", "grad")
_WEIGHT_WORDS = ("weight", "coef", "lambda", "lam", "alpha", "beta", "gamma", "mult", "ratio")
_LABELS = re.compile(r"\blabels\b")  # a `labels` argument or item, not `num_labels`
_MAX_DEPTH = 12
_LOSS_SCALES = frozenset({"loss_scale", "cur_scale"})
_RUNNER_HOOKS = frozenset({"after_train_iter"})
_BINDINGS: WeakKeyDictionary[UnitModel, dict[str, list[tuple[int, cst.CSTNode]]]] = WeakKeyDictionary()
_PLAIN: WeakKeyDictionary[UnitModel, dict[str, list[tuple[int, cst.CSTNode]]]] = WeakKeyDictionary()
_RETURNS: WeakKeyDictionary[UnitModel, list[tuple[int, cst.BaseExpression]]] = WeakKeyDictionary()
_RETURNED: WeakKeyDictionary[UnitModel, list[tuple[int, cst.BaseExpression | None]]] = WeakKeyDictionary()
_POSITIONS: WeakKeyDictionary[UnitModel, dict[tuple[str, int], tuple[int, int]]] = WeakKeyDictionary()
Position = tuple[int, int]
"""Where a name sits in the tuple it is unpacked from: its index, and the tuple's length."""


class Scaling(str, Enum):
    """The verdict on a loss expression."""

    SCALED = "scaled"
    UNSCALED = "unscaled"
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class Divisor:
    """An amount the loss is divided by on its way to the backward call."""

    node: cst.BaseExpression
    text: str  # as written, outer parentheses dropped
    counts_tokens: bool  # named like a count of valid tokens (`num_tokens`, `mask.sum()`)
    names_accumulation: bool  # named like the accumulation factor (`grad_accum_steps`)
    own_count: bool = False  # a token count a loss method computes from its own micro-batch


@dataclass
class LossTrace:
    """The verdict, the divisors met on the way, and whether the loss is a per-token mean."""

    scaling: Scaling
    divisors: list[Divisor] = field(default_factory=list)
    token_mean: bool = False  # evidence that the loss is a mean over masked tokens


Callers = tuple[tuple[cst.Call, UnitModel], ...]
"""The followed calls that reach a helper, outermost first, each with the unit making it."""


def trace_loss(unit: UnitModel, expr: cst.BaseExpression | None, line: int, callers: Callers = ()) -> LossTrace:
    """Trace the loss ``expr`` used at ``line`` of ``unit``, reached through ``callers``."""
    tracer = _Tracer(unit, callers)
    if expr is None:
        return LossTrace(Scaling.UNKNOWN)
    scaling = tracer.trace(expr, line, 0)
    divisors = [_divisor(unit, node, any(node is n for n in tracer.own)) for node in tracer.divisors]
    origins = [unit.text_of(call) for call in tracer.origins]
    return LossTrace(scaling, divisors, _token_mean(unit, origins, tracer.model_output))


def _divisor(unit: UnitModel, node: cst.BaseExpression, own: bool = False) -> Divisor:
    bare = node.with_changes(lpar=[], rpar=[]) if getattr(node, "lpar", None) else node
    text = unit.text_of(bare).strip()
    low = text.lower()
    tokens = any(w in low for w in _TOKEN_COUNT_WORDS)
    return Divisor(node, text, tokens, any(w in low for w in ACCUMULATION_WORDS), own and tokens)


def _token_mean(unit: UnitModel, origins: list[str], model_output: bool) -> bool:
    """Evidence of a mean over masked tokens in the calls the loss comes from (``origins``):
    ``ignore_index``, or a token loss (or a model's own ``outputs.loss``, ``model_output``) in
    a module that masks labels with -100; never with ``reduction="sum"``."""
    if any("reduction" in code for code in origins):
        return False
    if any("ignore_index" in code for code in origins):
        return True
    if not unit.facts.token_masking:
        return False
    return model_output or any(_LABELS.search(code) or any(w in code.lower() for w in _TOKEN_LOSSES) for code in origins)


def _combine(verdicts: list[Scaling]) -> Scaling:
    if Scaling.SCALED in verdicts:
        return Scaling.SCALED
    if verdicts and all(v is Scaling.UNSCALED for v in verdicts):
        return Scaling.UNSCALED
    return Scaling.UNKNOWN


class _Tracer:
    def __init__(self, unit: UnitModel, callers: Callers = ()) -> None:
        self.unit = unit
        self.callers = list(callers)
        self.divisors: list[cst.BaseExpression] = []
        self.origins: list[cst.Call] = []
        self.model_output = False
        self._names: dict[tuple[str, int, int], Scaling] = {}  # (unit:name, line, depth) already traced
        self._within: list[UnitModel] = []  # the callers of the methods whose returns are being traced
        self.own: list[cst.BaseExpression] = []  # divisors a loss method computes from its own inputs

    def trace(self, expr: cst.BaseExpression, line: int, depth: int) -> Scaling:
        if depth > _MAX_DEPTH:
            return Scaling.UNKNOWN
        if isinstance(expr, cst.BinaryOperation):
            return self._binary(expr, line, depth)
        if isinstance(expr, cst.IfExp):  # `loss / acc if acc > 1 else loss`
            return _combine([self.trace(expr.body, line, depth + 1), self.trace(expr.orelse, line, depth + 1)])
        if isinstance(expr, cst.Call):
            return self._call(expr, line, depth)
        if isinstance(expr, cst.Subscript):
            item = keyed(expr)
            self.model_output |= item is not None and item.endswith('["loss"]')
            if item is not None and runner_loss(self.unit, item):
                return Scaling.UNSCALED
            if item is not None and item in bindings(self.unit):
                return self._name(item, line, depth)
            return self.trace(expr.value, line, depth + 1)
        if isinstance(expr, cst.Attribute) and expr.attr.value == "loss":
            self.model_output = True
        name = dotted(expr)
        if isinstance(expr, cst.Attribute) and (name is None or name not in self.unit.assignments):
            return self.trace(expr.value, line, depth + 1)
        if name is None:
            return Scaling.UNKNOWN
        return self._name(name, line, depth)

    def _binary(self, expr: cst.BinaryOperation, line: int, depth: int) -> Scaling:
        op = expr.operator
        if isinstance(op, (cst.Divide, cst.FloorDivide)):
            self.divisors.append(expr.right)
            self.trace(expr.left, line, depth + 1)
            return Scaling.SCALED
        if isinstance(op, cst.Multiply):
            left_first = _down_scale(expr.left) is not None
            factor, loss = (expr.left, expr.right) if left_first else (expr.right, expr.left)
            if not left_first and _down_scale(factor) is None and self._weight(loss) and not self._weight(factor):
                factor, loss = loss, factor  # `weight * loss`
            verdict = self.trace(loss, line, depth + 1)
            if _down_scale(factor) is None and (self._weight(factor) or _loss_scale(factor)):
                return verdict  # a loss weight (or fp16 loss scale) neither divides nor undoes a division
            return self._multiplied(factor)
        if isinstance(op, (cst.Add, cst.Subtract)):
            return _combine([self.trace(expr.left, line, depth + 1), self.trace(expr.right, line, depth + 1)])
        if isinstance(op, cst.Power) and isinstance(expr.right, (cst.Integer, cst.Float)):
            return self.trace(expr.left, line, depth + 1)  # `norm ** 2` (a gradient penalty) is as scaled as its base
        return Scaling.UNKNOWN

    def _weight(self, factor: cst.BaseExpression) -> bool:
        """A loss weight: a number of at least 1 (or 0), or a name that reads as a weight
        (``args.loss_multiplier``, ``self.lambda_kd``, ``w``) and is never assigned a quotient
        or anything named like a count, a scale or the accumulation factor in this unit."""
        if isinstance(factor, (cst.Integer, cst.Float)):  # 0 drops the micro-batch (`if loss < 0: loss *= 0`)
            return factor.evaluated_value >= 1 or factor.evaluated_value == 0
        name = dotted(factor)
        if name is None:
            return False
        last = name.rsplit(".", 1)[-1].lower()
        if any(w in last for w in _RESCALING_WORDS):
            return False
        if "loss" in last and not any(w in last for w in _WEIGHT_WORDS):
            return False
        for value in self.unit.bound_values(name) + [v for _, v in bindings(self.unit).get(name, [])]:
            text = self.unit.text_of(value).lower()
            if "/" in text or any(w in text for w in _RESCALING_WORDS):
                return False
        return True

    def _multiplied(self, factor: cst.BaseExpression) -> Scaling:
        """``loss * (1 / N)`` or ``loss * 0.25`` scale down; any other factor (a weight, a
        loss scale, N itself to undo a framework's division) says nothing definite."""
        divisor = _down_scale(factor)
        if divisor is None:
            return Scaling.UNKNOWN
        self.divisors.append(divisor)
        return Scaling.SCALED

    def _name(self, name: str, line: int, depth: int) -> Scaling:
        """Every assignment to ``name`` above ``line``; a self-reference on the right reads
        the assignments above that one (``loss = loss + aux``). Each (name, line, depth) is
        traced once: ``loss = loss + loss`` repeated would otherwise branch exponentially."""
        key = (f"{id(self.unit)}:{name}", line, depth)
        if key not in self._names:
            self._names[key] = self._assignments(name, line, depth)
        return self._names[key]

    def _assignments(self, name: str, line: int, depth: int) -> Scaling:
        bound = [*assignments(self.unit).get(name, []), *bindings(self.unit).get(name, [])]
        found = [(at, value) for at, value in bound if at <= line]
        if not found:
            return self._argument(name, depth)
        verdicts = []
        for at, value in found:
            if isinstance(value, cst.AugAssign):
                if isinstance(value.operator, cst.DivideAssign):
                    self.divisors.append(value.value)
                    verdicts.append(Scaling.SCALED)
                elif isinstance(value.operator, cst.MultiplyAssign) and self._weight(value.value):
                    verdicts.append(Scaling.UNSCALED)  # `loss *= weight` leaves the loss as scaled as before
                elif isinstance(value.operator, cst.MultiplyAssign):
                    verdicts.append(self._multiplied(value.value))
                else:
                    verdicts.append(self.trace(value.value, at - 1, depth + 1))
            elif isinstance(value, cst.Call) and (name, at) in positions(self.unit):
                verdicts.append(self._call(value, at - 1, depth + 1, positions(self.unit)[(name, at)]))
            elif isinstance(value, cst.BaseExpression):
                verdicts.append(self.trace(value, at - 1, depth + 1))
        return _combine(verdicts) if verdicts else Scaling.UNKNOWN

    def _argument(self, name: str, depth: int) -> Scaling:
        """A parameter of a followed helper: the argument its caller passes, traced in the
        caller (``def backward_step(self, loss)`` reached by ``self.backward_step(loss / N)``)."""
        if not self.callers:
            return Scaling.UNKNOWN
        call, caller = self.callers[-1]
        argument = passed_argument(self.unit, through_partial(call, caller), name)
        if argument is None:
            return Scaling.UNKNOWN
        unit = self.unit
        self.callers.pop()
        self.unit = caller
        try:
            verdict = self.trace(argument, caller.span(call).line, depth + 1)
        finally:
            self.unit = unit
            self.callers.append((call, caller))
        # a helper that backpropagates what it is handed serves losses the caller may have
        # built whole (a re-forward over the window's cached features): only a division counts
        return verdict if verdict is Scaling.SCALED else Scaling.UNKNOWN

    def _call(self, call: cst.Call, line: int, depth: int, position: Position | None = None) -> Scaling:
        """A call's value; ``position``: the element of the tuple it returns that the loss is
        unpacked from (``loss, probs = self.compute_loss(out)``)."""
        func = call.func
        callee = dotted(func) or ""
        last = func.attr.value if isinstance(func, cst.Attribute) else callee.rsplit(".", 1)[-1]
        if last == "cast" and len(call.args) == 2:  # typing.cast(Tensor, loss)
            return self.trace(call.args[1].value, line, depth + 1)
        if last in _DIVIDING_CALLS and call.args:
            self.divisors.append(call.args[-1].value)
            return Scaling.SCALED
        if last in _MULTIPLYING_CALLS and call.args:
            return self._multiplied(call.args[-1].value)
        if isinstance(func, cst.Attribute):
            if last == "scale" and self.unit.facts.kind_of(dotted(func.value)) is Kind.SCALER and call.args:
                return self.trace(call.args[0].value, line, depth + 1)
            if last in _PASS_THROUGH:
                return self.trace(func.value, line, depth + 1)
        self.origins.append(call)
        if _mentions_scaling(call):
            return Scaling.SCALED
        local = callee.rsplit(".", 1)[-1]
        if local in self.unit.facts.functions and (callee == local or callee.startswith("self.")):
            helper = _sibling(self.unit, local) if callee == f"self.{local}" else None
            return self._returned(helper, depth, position) if helper is not None else Scaling.UNKNOWN
        return Scaling.UNSCALED

    def _returned(self, helper: UnitModel, depth: int, position: Position | None = None) -> Scaling:
        """What a method of the same class returns (``loss = self.compute_loss(batch)``), traced
        in that method: each ``return`` value (a tuple's elements, a ``loss=`` keyword of a
        returned constructor call); a method with a bare return, or none, says nothing. The
        method's divisions count; the calls it takes its loss from are no evidence of a token
        mean for the loop (GL203 reads the method's own token count instead). With ``position``,
        only that element of each returned tuple, when every ``return`` writes one out."""
        returns = (returned_element(helper, position) if position is not None else None) or returned_values(helper)
        if not returns or any(self.unit is u for u in self._within):
            return Scaling.UNKNOWN
        unit, callers, origins, model_output = self.unit, self.callers, self.origins, self.model_output
        self.unit, self.callers = helper, []  # the helper's parameters are not the loop's to map
        self.origins = []  # how the method reduces its loss is its own: no token-mean evidence here
        self._within.append(unit)
        before = len(self.divisors)
        try:
            verdicts = [self.trace(value, line, depth + 1) for line, value in returns]
        finally:
            self._within.pop()
            self.unit, self.callers, self.origins, self.model_output = unit, callers, origins, model_output
        self.own.extend(d for d in self.divisors[before:] if _computed_inside(helper, d))
        return _combine(verdicts)


def _computed_inside(helper: UnitModel, divisor: cst.BaseExpression) -> bool:
    """Whether ``divisor`` is an amount the method computes itself (``mask.sum()``, ``n = ...``),
    not one it is handed (a parameter, ``self.x``, or a name bound to one): a count of its own
    micro-batch, not of the window."""
    root = helper.root
    if not isinstance(root, cst.FunctionDef):
        return False
    params = parameter_names(root)

    def handed(expr: cst.BaseExpression) -> bool:
        name = dotted(expr)
        return name is not None and (name in params or name.startswith("self."))

    if handed(divisor):
        return False
    name = dotted(divisor)
    if name is None:
        return True
    values = [v for _, v in assignments(helper).get(name, [])]
    return bool(values) and not any(isinstance(v, cst.BaseExpression) and handed(v) for v in values)


def _sibling(unit: UnitModel, name: str) -> UnitModel | None:
    """The one other method ``name`` of ``unit``'s class in its module, parsed."""
    if unit.siblings is None or unit.unit.class_name is None:
        return None
    found = [other for other in unit.siblings(name) if other.unit.name == name]
    return found[0] if len(found) == 1 else None


def returned_values(unit: UnitModel) -> list[tuple[int, cst.BaseExpression]]:
    """Each value ``unit`` returns, with its line: a returned tuple's elements, the ``loss=``
    argument of a returned call that has one; empty when some ``return`` returns nothing or the
    function never returns (a generator's values are not its result)."""
    if unit not in _RETURNS:
        finder = _Returns(unit)
        unit.root.visit(finder)
        _RETURNS[unit] = [] if finder.bare or finder.yields else finder.found
        _RETURNED[unit] = [] if finder.bare or finder.yields else finder.written
    return _RETURNS[unit]


def returned_element(unit: UnitModel, position: Position) -> list[tuple[int, cst.BaseExpression]] | None:
    """The element at ``position`` of each tuple ``unit`` returns, with its line; None unless
    every ``return`` writes out a tuple of that length (no starred or nested tuple there)."""
    returned_values(unit)
    index, count = position
    found = []
    for line, value in _RETURNED[unit]:
        if not isinstance(value, (cst.Tuple, cst.List)) or len(value.elements) != count:
            return None
        element = value.elements[index]
        if isinstance(element, cst.StarredElement) or isinstance(element.value, (cst.Tuple, cst.List)):
            return None
        found.append((line, element.value))
    return found or None


class _Returns(cst.CSTVisitor):
    def __init__(self, unit: UnitModel) -> None:
        self.unit = unit
        self.found: list[tuple[int, cst.BaseExpression]] = []
        self.written: list[tuple[int, cst.BaseExpression | None]] = []  # each return's value as written
        self.bare = False
        self.yields = False

    def on_visit(self, node: cst.CSTNode) -> bool:
        if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)) and node is not self.unit.root:
            return False
        if isinstance(node, cst.Yield):
            self.yields = True
        if isinstance(node, cst.Return):
            self.written.append((self.unit.span(node).line, node.value))
            self._value(node.value, self.unit.span(node).line)
        return True

    def _value(self, value: cst.BaseExpression | None, line: int) -> None:
        if value is None or isinstance(value, cst.Name) and value.value == "None":
            self.bare = True
        elif isinstance(value, (cst.Tuple, cst.List)):
            for element in value.elements:
                self._value(element.value, line)
        elif isinstance(value, cst.Call) and any(a.keyword is not None and a.keyword.value == "loss" for a in value.args):
            self.found.append((line, next(a.value for a in value.args if a.keyword is not None and a.keyword.value == "loss")))
        elif isinstance(value, cst.Dict) or isinstance(value, cst.Call) and any(a.keyword is not None for a in value.args):
            self.bare = True  # a record of several values: which one is the loss is not known here
        else:
            self.found.append((line, value))


def assignments(unit: UnitModel) -> dict[str, list[tuple[int, cst.CSTNode]]]:
    """``unit``'s assignment table, with lines: the walk's (see :mod:`gradlint.model.collect`),
    or, for a method read only for what it returns, the plain ``name = value`` ones."""
    if unit.summary is not None or unit.assignments:
        return unit.assignments
    if unit not in _PLAIN:
        found: dict[str, list[tuple[int, cst.CSTNode]]] = {}

        class _Plain(cst.CSTVisitor):
            def on_visit(self, node: cst.CSTNode) -> bool:
                if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)) and node is not unit.root:
                    return False
                if isinstance(node, cst.Assign):
                    for target in node.targets:
                        name = dotted(target.target)
                        if name is not None:
                            found.setdefault(name, []).append((unit.span(node).line, node.value))
                elif isinstance(node, cst.AugAssign) and dotted(node.target) is not None:
                    found.setdefault(dotted(node.target) or "", []).append((unit.span(node).line, node))
                return True

        unit.root.visit(_Plain())
        _PLAIN[unit] = found
    return _PLAIN[unit]


def passed_argument(callee: UnitModel, call: cst.Call, name: str) -> cst.BaseExpression | None:
    """What ``call`` passes for the parameter ``name`` of the function ``callee`` (its first
    parameter is the receiver of a method called on an object: ``self.helper(x)``); None when
    ``name`` is no parameter, is not passed, or starred arguments hide the mapping."""
    root = callee.root
    if not isinstance(root, cst.FunctionDef) or any(a.star for a in call.args):
        return None
    params = [*root.params.posonly_params, *root.params.params]
    static = any(dotted(d.decorator) == "staticmethod" for d in root.decorators)
    if callee.unit.class_name is not None and isinstance(call.func, cst.Attribute) and params and not static:
        params = params[1:]
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg.value
    positional = [a.value for a in call.args if a.keyword is None]
    index = next((i for i, p in enumerate(params) if p.name.value == name), None)
    return positional[index] if index is not None and index < len(positional) else None


def _down_scale(expr: cst.BaseExpression) -> cst.BaseExpression | None:
    """The divisor a multiplier stands for: ``N`` for ``1 / N``, the literal for ``0.25``."""
    if isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Divide):
        if isinstance(expr.left, (cst.Integer, cst.Float)) and expr.left.evaluated_value == 1:
            return expr.right
    if isinstance(expr, cst.Float) and 0 < expr.evaluated_value < 1:
        return expr
    return None


def _loss_scale(factor: cst.BaseExpression) -> bool:
    """An fp16 loss scale (``self.loss_scaler.loss_scale``, ``cur_scale``): it multiplies the
    loss for the half-precision backward and is divided out of the gradients again, so it
    neither divides by N nor undoes a division."""
    name = dotted(factor)
    return name is not None and name.rsplit(".", 1)[-1] in _LOSS_SCALES


def runner_loss(unit: UnitModel, item: str) -> bool:
    """``runner.outputs["loss"]`` in an mmcv runner hook's ``after_train_iter(self, runner)``:
    the runner stores there the loss its model's ``train_step`` returned for this iteration
    (one micro-batch's, as the model reduced it), so it arrives unscaled."""
    root = unit.root
    if not isinstance(root, cst.FunctionDef) or root.name.value not in _RUNNER_HOOKS or unit.unit.class_name is None:
        return False
    params = root.params.params
    if len(params) < 2:
        return False
    runner = params[1].name.value
    return item == f'{runner}.outputs["loss"]' and runner not in unit.assignments


def _mentions_scaling(call: cst.Call) -> bool:
    """An argument named like the accumulation factor: the callee is told about N."""
    for arg in call.args:
        words = names_in(arg.value) | ({arg.keyword.value} if arg.keyword else set())
        if any(w in name.lower() for name in words for w in _SCALING_WORDS):
            return True
    return False


def bindings(unit: UnitModel) -> dict[str, list[tuple[int, cst.CSTNode]]]:
    """What the unit's assignment table leaves out, each with its line and value: names bound
    by tuple unpacking (the matching element of a tuple written out, ``a, b = x, y``, else the
    whole right side: ``logits, loss = model(x, y)``), string-keyed items
    (``out["loss"] = out["loss"] / N``, also augmented), keyed as :func:`keyed` writes them,
    and in-place ``loss.div_(N)`` / ``loss.mul_(1 / N)`` (the call stands for the new value)."""
    if unit not in _BINDINGS:
        finder = _Bindings(unit)
        root = unit.root
        for _, node in preorder(root).pruned(lambda node: isinstance(node, _NEW_SCOPES) and node is not root):
            finder.read(node)
        _BINDINGS[unit], _POSITIONS[unit] = finder.found, finder.positions
    return _BINDINGS[unit]


def positions(unit: UnitModel) -> dict[tuple[str, int], Position]:
    """For each ``(name, line)`` of :func:`bindings` unpacked from a call's value
    (``loss, probs = self.compute_loss(out)``), where the name sits in the returned tuple."""
    bindings(unit)
    return _POSITIONS[unit]


def keyed(expr: cst.Subscript) -> str | None:
    """``out["loss"]`` for a string-keyed item of a dotted name, else None."""
    name = dotted(expr.value)
    key = expr.slice[0].slice if len(expr.slice) == 1 else None
    if name is None or not isinstance(key, cst.Index) or not isinstance(key.value, cst.SimpleString):
        return None
    value = key.value.evaluated_value
    return f'{name}["{value}"]' if isinstance(value, str) else None


_NEW_SCOPES = (cst.FunctionDef, cst.ClassDef, cst.Lambda)
"""Nested scopes: what they bind is not the unit's."""


class _Bindings:
    def __init__(self, unit: UnitModel) -> None:
        self.unit = unit
        self.found: dict[str, list[tuple[int, cst.CSTNode]]] = {}
        self.positions: dict[tuple[str, int], Position] = {}

    def read(self, node: cst.CSTNode) -> None:
        """Record what ``node`` (of the unit's own code, in visiting order) binds."""
        if isinstance(node, cst.Assign):
            for target in node.targets:
                self._bind(target.target, node.value, self.unit.span(node).line)
        elif isinstance(node, cst.AugAssign) and isinstance(node.target, cst.Subscript):
            self._item(node.target, node, self.unit.span(node).line)
        elif isinstance(node, cst.Expr) and isinstance(node.value, cst.Call):
            self._in_place(node.value, self.unit.span(node).line)

    def _in_place(self, call: cst.Call, line: int) -> None:
        """``loss.div_(N)`` / ``loss.mul_(1 / N)`` rebinds ``loss`` to the call's value."""
        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value in _IN_PLACE and call.args:
            name = dotted(func.value)
            if name is not None:
                self.found.setdefault(name, []).append((line, call))

    def _item(self, target: cst.Subscript, value: cst.CSTNode, line: int) -> None:
        item = keyed(target)
        if item is not None:
            self.found.setdefault(item, []).append((line, value))

    def _bind(self, target: cst.BaseExpression, value: cst.BaseExpression, line: int) -> None:
        if isinstance(target, cst.Subscript):
            self._item(target, value, line)
            return
        if not isinstance(target, (cst.Tuple, cst.List)):
            return
        written = value.elements if isinstance(value, (cst.Tuple, cst.List)) else None
        if written is not None and len(written) != len(target.elements):
            return
        for at, element in enumerate(target.elements):
            inner = element.value
            part = written[at].value if written is not None else value
            if isinstance(element, cst.StarredElement):
                continue
            if isinstance(inner, (cst.Tuple, cst.List)):
                self._bind(inner, part, line)
                continue
            name = dotted(inner)
            if name is not None:
                self.found.setdefault(name, []).append((line, part))
                if written is None and isinstance(value, cst.Call):
                    self.positions[(name, line)] = (at, len(target.elements))


@per_node
def scales_gradients(node: cst.CSTNode) -> bool:
    """Whether ``node`` scales the accumulated gradients instead of the loss: ``p.grad /= N``,
    ``p.grad *= 1 / N``, ``p.grad = p.grad / N``, ``p.grad.div_(n)`` (``.data`` too), or a call
    named for it (``scale_grads(model, 1 / num_tokens)``); dividing out an fp16 loss scale
    (``p.grad.div_(self.loss_scaler.loss_scale)``) is unscaling, not a 1/N."""
    return any(_scales_grads(inner) for inner in preorder(node).nodes)


def _scales_grads(node: cst.CSTNode) -> bool:
    if isinstance(node, cst.AugAssign):
        return (isinstance(node.operator, (cst.DivideAssign, cst.MultiplyAssign)) and _is_grad(node.target)
                and not _loss_scale(node.value))
    if isinstance(node, cst.Assign):
        value = node.value
        return (isinstance(value, cst.BinaryOperation) and isinstance(value.operator, (cst.Divide, cst.Multiply))
                and any(_is_grad(t.target) for t in node.targets) and (_is_grad(value.left) or _is_grad(value.right))
                and not _loss_scale(value.left if _is_grad(value.right) else value.right))
    if isinstance(node, cst.Call):
        func = node.func
        if isinstance(func, cst.Attribute):
            if (func.attr.value in (_DIVIDING_CALLS | _MULTIPLYING_CALLS) and _is_grad(func.value)
                    and not (len(node.args) == 1 and _loss_scale(node.args[0].value))):
                return True
            name = func.attr.value
        else:
            name = dotted(func) or ""
        low = name.lower()
        return "scale_grad" in low and "unscale" not in low
    return False


def _is_grad(node: cst.BaseExpression) -> bool:
    """``p.grad`` or ``p.grad.data``."""
    if isinstance(node, cst.Attribute) and node.attr.value == "data":
        node = node.value
    return isinstance(node, cst.Attribute) and node.attr.value == "grad"
