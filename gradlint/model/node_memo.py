"""Results of pure functions of libcst subtrees, kept across lints.

libcst trees are immutable and a unit's tree is kept while its text is unchanged
(:func:`gradlint.model.unit._parse_segment`), and nodes compare by identity: so what a walk of
a subtree finds can be kept under the subtree's root node and reused by the next lint of the
same text (the language server's re-lint after an edit elsewhere in the file).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import TypeVar

import libcst as cst

T = TypeVar("T")
N = TypeVar("N", bound=cst.CSTNode)

_MAX_ENTRIES = 256
"""How many subtrees' results each memoized function keeps, the most recently used last."""


def per_node(function: Callable[[N], T]) -> Callable[[N], T]:
    """``function`` (of one node, returning a value its callers only read) computed once per node."""
    kept: dict[cst.CSTNode, T] = {}

    @wraps(function)
    def memoized(node: N) -> T:
        if node in kept:
            value = kept.pop(node)
        else:
            value = function(node)
        kept[node] = value
        if len(kept) > _MAX_ENTRIES:
            del kept[next(iter(kept))]
        return value

    return memoized
