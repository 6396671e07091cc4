"""Identity wrappers: calls that return their argument unchanged, for the type checker only
(``none_throws(self.lr_scheduler)``, ``typing.cast(Optimizer, opt)``). A method called on one
is called on the object it wraps."""

from __future__ import annotations

import libcst as cst

_FIRST = frozenset({"none_throws", "not_none", "unwrap_optional"})
"""Wrappers returning their first argument (a message may follow)."""
_LAST = frozenset({"cast"})
"""``typing.cast(T, value)``: the value is the last of two arguments."""


def unwrapped(node: cst.BaseExpression) -> cst.BaseExpression:
    """The object an identity wrapper call returns, through nested wrappers; ``node`` itself
    for anything else."""
    while isinstance(node, cst.Call):
        func = node.func
        name = func.attr.value if isinstance(func, cst.Attribute) else func.value if isinstance(func, cst.Name) else ""
        positional = [a.value for a in node.args if a.keyword is None and not a.star]
        if name in _FIRST and positional and len(positional) <= 2:
            node = positional[0]
        elif name in _LAST and len(positional) == 2 and len(node.args) == 2:
            node = positional[1]
        else:
            break
    return node
