"""gradlint.model.preorder: the nodes, parents and pruning a libcst visitor would see."""

from __future__ import annotations

import libcst as cst

from gradlint.model.preorder import preorder

SOURCE = '''\
def train(model, loader, optimizer):
    @decorated(lambda x: x + 1)
    def helper(y):
        return y.backward()
    for x in loader:
        loss = model(x) / 4
        loss.backward()
        optimizer.step()
'''


class _Seen(cst.CSTVisitor):
    """The order, and ancestors, libcst's own visit gives; nested functions pruned if asked."""

    def __init__(self, prune: bool) -> None:
        self.prune = prune
        self.order: list[tuple[cst.CSTNode, tuple[cst.CSTNode, ...]]] = []
        self.stack: list[cst.CSTNode] = []

    def on_visit(self, node: cst.CSTNode) -> bool:
        if self.prune and isinstance(node, (cst.FunctionDef, cst.Lambda)) and self.stack:
            return False
        self.order.append((node, tuple(self.stack)))
        self.stack.append(node)
        return True

    def on_leave(self, original_node: cst.CSTNode) -> None:
        if self.stack and self.stack[-1] is original_node:
            self.stack.pop()


def _root() -> cst.CSTNode:
    return cst.parse_module(SOURCE).body[0]


def test_nodes_and_ancestors_are_in_visiting_order() -> None:
    root = _root()
    seen = _Seen(prune=False)
    root.visit(seen)
    order = preorder(root)
    assert list(order.nodes) == [node for node, _ in seen.order]
    assert [order.ancestors(i) for i in range(len(order.nodes))] == [ancestors for _, ancestors in seen.order]


def test_a_pruned_node_leaves_out_its_subtree_only() -> None:
    root = _root()
    seen = _Seen(prune=True)
    root.visit(seen)
    kept = list(preorder(root).pruned(lambda n: isinstance(n, (cst.FunctionDef, cst.Lambda)) and n is not root))
    assert [node for _, node in kept] == [node for node, _ in seen.order]
    names = [n.value for _, n in kept if isinstance(n, cst.Name)]
    assert "helper" not in names and "y" not in names and "optimizer" in names


def test_the_listing_is_kept_per_root() -> None:
    root = _root()
    assert preorder(root) is preorder(root)
    assert preorder(_root()) is not preorder(root)
