"""How many times a micro-batch loop runs, when its header says so.

``for _ in range(N)`` runs N times. A loop over a helper handed the accumulation factor by a
name that says so (``for ctx in gradient_accumulate_contexts(self.gradient_accumulate_every, ...)``,
``for chunk in torch.chunk(batch, self.grad_accum_steps)``) yields once per micro-batch of the
window too: N is that argument. A size (``micro_batch_size``), an expression or a name of any
other kind says nothing: how many pieces a split yields is not read here.
"""

from __future__ import annotations

import libcst as cst

from gradlint.model.syntax import dotted

_FACTOR_WORDS = ("accum", "grad_acc")
"""Words of an argument's last name that make it the accumulation factor."""


def micro_count(loop: cst.CSTNode) -> cst.BaseExpression | None:
    """N for a micro-batch ``for`` over ``range(N)`` or over a call handed one argument named
    like the accumulation factor."""
    if not isinstance(loop, cst.For) or not isinstance(loop.iter, cst.Call):
        return None
    call = loop.iter
    args = [a.value for a in call.args if not a.star]
    if dotted(call.func) == "range":
        return args[0] if len(args) == 1 and len(call.args) == 1 else None
    named = [a for a in args if _names_factor(a)]
    return named[0] if len(named) == 1 else None


def _names_factor(expr: cst.BaseExpression) -> bool:
    name = dotted(expr)
    return name is not None and any(w in name.rsplit(".", 1)[-1].lower() for w in _FACTOR_WORDS)
