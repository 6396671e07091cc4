"""Small helpers over libcst expressions shared by the model builder."""

from __future__ import annotations

import libcst as cst

from gradlint.model.identity import unwrapped


def dotted(node: cst.CSTNode | None) -> str | None:
    """``a.b.c`` for a Name/Attribute chain, else None."""
    parts: list[str] = []
    while isinstance(node, cst.Attribute):
        parts.append(node.attr.value)
        node = node.value
    if isinstance(node, cst.Name):
        parts.append(node.value)
        return ".".join(reversed(parts))
    return None


def receiver_text(node: cst.BaseExpression) -> str | None:
    """The name a method is called on: ``opt`` for ``opt.step()``, ``optimizers`` for
    ``optimizers[i].step()``, ``self.optimizers`` for ``self.optimizers().step()``,
    ``self.lr_scheduler`` for ``none_throws(self.lr_scheduler).step()``."""
    node = unwrapped(node)
    if isinstance(node, cst.Subscript):
        return dotted(node.value)
    if isinstance(node, cst.Call) and not node.args:
        return dotted(node.func)
    return dotted(node)


def names_in(node: cst.CSTNode) -> set[str]:
    """Every dotted name read inside ``node``."""
    found: set[str] = set()

    class _Names(cst.CSTVisitor):
        def visit_Attribute(self, attr: cst.Attribute) -> bool:
            name = dotted(attr)
            if name:
                found.add(name)
                return False
            return True

        def visit_Name(self, name: cst.Name) -> None:
            found.add(name.value)

    node.visit(_Names())
    return found


def parameter_names(function: cst.FunctionDef) -> set[str]:
    """The names of ``function``'s positional and keyword parameters (``self`` included; not
    ``*args`` / ``**kwargs``)."""
    params = function.params
    return {p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)}


def first_arg(call: cst.Call) -> cst.BaseExpression | None:
    """The first positional argument of ``call``."""
    for arg in call.args:
        if arg.keyword is None and not arg.star:
            return arg.value
    return None


def is_lr_target(target: cst.BaseExpression) -> bool:
    """Whether an assignment target sets a learning rate: ``optimizer.lr`` or ``group["lr"]``."""
    if isinstance(target, cst.Attribute):
        return target.attr.value == "lr"
    if isinstance(target, cst.Subscript) and len(target.slice) == 1:
        key = target.slice[0].slice
        return isinstance(key, cst.Index) and isinstance(key.value, cst.SimpleString) and key.value.evaluated_value == "lr"
    return False
