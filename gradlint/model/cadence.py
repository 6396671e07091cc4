"""Which names drive a cadence measured in updates: an evaluation, checkpoint, logging or LR
condition (``if step % eval_every == 0``), a stop budget (``if step >= max_steps: break``), or
a learning rate computed from them (``group["lr"] = lr_at(step)``).

Names only handed to a logging call (an x-axis), used as a running-average denominator, read
by a resume skip (``if step < resume_step: continue``) or only compared with the accumulation
factor are not cadence: counting micro-batches there is harmless or intended.
"""

from __future__ import annotations

from collections.abc import Iterable

import libcst as cst

from gradlint.model.collect import Site
from gradlint.model.node_memo import per_node
from gradlint.model.preorder import preorder
from gradlint.model.syntax import is_lr_target, names_in
from gradlint.model.unit import UnitModel


def cadence_names(ifs: Iterable[Site[cst.If]], gates: list[cst.If], factor: cst.BaseExpression | None,
                  homes: Iterable[UnitModel]) -> frozenset[str]:
    """The names that drive a cadence in the non-gate ``if`` tests ``ifs`` and in the LR
    assignments of the units ``homes``; ``factor`` is the loop's accumulation factor."""
    factor_names = names_in(factor) if factor is not None else set()
    found: set[str] = set()
    for site in ifs:
        if any(site.node is g for g in gates) or _skips(site.node):
            continue
        for test in _comparisons(site.node.test):
            names = names_in(test)
            if factor_names and names & factor_names:
                continue  # compared with N (or taken modulo N): a gate, not a cadence
            found |= names
    for unit in homes:
        found |= _lr_names(unit.root)
    return frozenset(found)


def _skips(node: cst.If) -> bool:
    """``if ...: continue`` with no ``else``: a resume skip (or a filter), not a cadence."""
    body = node.body
    if node.orelse is not None or not isinstance(body, cst.IndentedBlock) or len(body.body) != 1:
        return False
    line = body.body[0]
    return isinstance(line, cst.SimpleStatementLine) and isinstance(line.body[-1], cst.Continue)


def _comparisons(test: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The comparisons, ``%`` tests and arguments of deciding calls joined by ``and`` / ``or`` /
    ``not`` in ``test``."""
    if isinstance(test, cst.BooleanOperation):
        return [*_comparisons(test.left), *_comparisons(test.right)]
    if isinstance(test, cst.UnaryOperation):
        return _comparisons(test.expression)
    if isinstance(test, cst.Comparison) or (isinstance(test, cst.BinaryOperation) and isinstance(test.operator, cst.Modulo)):
        return [test]
    if isinstance(test, cst.Call):  # `if should_save(step):` decides from its arguments
        return [arg.value for arg in test.args]
    return []


@per_node
def _lr_names(root: cst.CSTNode) -> frozenset[str]:
    """Names read by the right side of ``group["lr"] = ...`` / ``optimizer.lr = ...``."""
    found: set[str] = set()
    for node in preorder(root).nodes:
        if isinstance(node, cst.Assign) and any(is_lr_target(t.target) for t in node.targets):
            found.update(names_in(node.value))
    return frozenset(found)

