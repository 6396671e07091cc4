"""``ast.walk`` of a tree or a function, listed once per node and kept while the tree lives.

Many readers of a module (loss functions, sync guards, loaders, kinds, valid counts, hooks)
each walk the same module and its functions, some once per function or per call: a walk
listed once makes the later ones a plain iteration. Trees are never changed after parsing.
"""

from __future__ import annotations

import ast
import weakref

_WALKS: weakref.WeakKeyDictionary[ast.AST, tuple[ast.AST, ...]] = weakref.WeakKeyDictionary()


def walk(node: ast.AST) -> tuple[ast.AST, ...]:
    """The nodes ``ast.walk(node)`` yields, in its order (``node`` first, breadth first)."""
    found = _WALKS.get(node)
    if found is None:
        found = _WALKS[node] = _breadth_first(node)
    return found


def _breadth_first(node: ast.AST) -> tuple[ast.AST, ...]:
    """``tuple(ast.walk(node))`` without its two generators per node (``iter_child_nodes``,
    ``iter_fields``): each node's fields in ``_fields`` order, list fields item by item."""
    found: list[ast.AST] = [node]
    index = 0
    while index < len(found):
        current = found[index]
        index += 1
        for name in current._fields:
            value = getattr(current, name, None)
            if isinstance(value, ast.AST):
                found.append(value)
            elif isinstance(value, list):
                found.extend(item for item in value if isinstance(item, ast.AST))
    return tuple(found)
