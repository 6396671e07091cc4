"""gradlint.walks: the listed walk is ast.walk's, and it is listed once per node."""

from __future__ import annotations

import ast
from pathlib import Path

from gradlint.walks import walk

ROOT = Path(__file__).resolve().parent.parent


def test_the_walk_of_every_module_of_gradlint_is_ast_walks() -> None:
    for path in sorted((ROOT / "gradlint").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        assert list(walk(tree)) == list(ast.walk(tree)), path
        function = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)) \
            if any(isinstance(n, ast.FunctionDef) for n in ast.walk(tree)) else tree
        assert list(walk(function)) == list(ast.walk(function)), path


def test_a_node_is_walked_once_and_a_new_tree_anew() -> None:
    tree = ast.parse("def f(x):\n    return [y for y in x if y]\n")
    assert walk(tree) is walk(tree)
    other = ast.parse("def f(x):\n    return x\n")
    assert [type(n).__name__ for n in walk(other)][:4] == ["Module", "FunctionDef", "arguments", "Return"]
