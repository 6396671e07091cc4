"""The nodes of a libcst subtree in visiting order, listed once per subtree root.

Several readers of a unit (its summary, its bindings and assignments, its LR and clock
names, its scaler constructions) each visited the same tree with their own visitor, and a
libcst visit costs far more than the reading done at each node (it rebuilds every node and
dispatches on every attribute). One recording visit per root, kept like the tree it lists
(:mod:`gradlint.model.node_memo`), gives every reader the same order libcst's visitors see.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import libcst as cst

from gradlint.model.node_memo import per_node


@dataclass(frozen=True, eq=False)
class Preorder:
    """``nodes`` in the order a visitor's ``on_visit`` meets them (the root first); for each,
    the index of its parent (-1 for the root) and one past the index of its last descendant."""

    nodes: tuple[cst.CSTNode, ...]
    parents: array[int]
    ends: array[int]

    def ancestors(self, index: int) -> tuple[cst.CSTNode, ...]:
        """The ancestors of ``nodes[index]`` under the root, outermost (the root) first."""
        found: list[cst.CSTNode] = []
        parent = self.parents[index]
        while parent >= 0:
            found.append(self.nodes[parent])
            parent = self.parents[parent]
        found.reverse()
        return tuple(found)

    def pruned(self, skip: Callable[[cst.CSTNode], bool]) -> Iterator[tuple[int, cst.CSTNode]]:
        """``(index, node)`` of each node a visitor meets whose ``on_visit`` returns False at
        the nodes ``skip`` accepts (such a node and its subtree are left out)."""
        nodes, ends = self.nodes, self.ends
        index, count = 0, len(nodes)
        while index < count:
            node = nodes[index]
            if skip(node):
                index = ends[index]
                continue
            yield index, node
            index += 1


class _Recorder(cst.CSTVisitor):
    def __init__(self) -> None:
        self.nodes: list[cst.CSTNode] = []
        self.parents: array[int] = array("l")
        self.ends: array[int] = array("l")
        self._open: list[int] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        self._open.append(len(self.nodes))
        self.parents.append(self._open[-2] if len(self._open) > 1 else -1)
        self.ends.append(0)
        self.nodes.append(node)
        return True

    def on_leave(self, original_node: cst.CSTNode) -> None:
        self.ends[self._open.pop()] = len(self.nodes)

    def on_visit_attribute(self, node: cst.CSTNode, attribute: str) -> None:
        """No per-attribute callbacks: nothing here reads them."""

    def on_leave_attribute(self, original_node: cst.CSTNode, attribute: str) -> None:
        """No per-attribute callbacks: nothing here reads them."""


@per_node
def preorder(root: cst.CSTNode) -> Preorder:
    """The nodes of ``root``'s subtree in visiting order (read-only, kept per root)."""
    recorder = _Recorder()
    root.visit(recorder)
    return Preorder(tuple(recorder.nodes), recorder.parents, recorder.ends)
