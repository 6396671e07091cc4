"""Functions named for zeroing that cannot zero gradients: their text names no gradient
anywhere (``zero_losses`` resetting a dict of floats, ``zero_counters``). A call of one is not a
zeroing the loop may rely on (``TrainingLoop.calls_zeroing``)."""

from __future__ import annotations

import ast

from gradlint.walks import walk


def names_no_gradient(function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Whether no name, attribute, argument or string inside ``function`` mentions ``grad``."""
    for node in walk(function):
        text = (node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute)
                else node.arg if isinstance(node, ast.arg) else node.value if isinstance(node, ast.Constant)
                and isinstance(node.value, str) else "")
        if "grad" in text.lower():
            return False
    return True
