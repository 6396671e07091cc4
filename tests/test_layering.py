"""The package's imports form no cycle: data flows one way, from the catalogue and the model
up to the rules, the engine and the command line."""

from __future__ import annotations

import ast
from pathlib import Path

from conftest import ROOT

PACKAGE = ROOT / "gradlint"
KNOWN_CYCLES = [
    # removed by the pipeline change (file orchestration leaves fixer.py for the runner side)
    ["gradlint.fixer", "gradlint.notebook", "gradlint.runner"],
]


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _runtime_imports(tree: ast.Module, package: str) -> set[str]:
    """Modules imported when the module runs (``if TYPE_CHECKING:`` blocks left out)."""
    found: set[str] = set()
    checking = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If)
                and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING" for n in ast.walk(node)}
    for node in ast.walk(tree):
        if id(node) in checking:
            continue
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                head = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(head + ([base] if base else []))
            found |= {base, *(f"{base}.{alias.name}" for alias in node.names)}
    return found


def import_graph() -> dict[str, set[str]]:
    """Each gradlint module and the gradlint modules (and their packages) it imports."""
    paths = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {}
    for name, path in paths.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        targets = {t for t in _runtime_imports(ast.parse(path.read_text(encoding="utf-8")), package) if t in paths}
        parents = {".".join(t.split(".")[:k]) for t in targets for k in range(2, t.count(".") + 1)}
        graph[name] = {t for t in targets | parents if t in paths and t != name and not name.startswith(t + ".")}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for target in sorted(graph[node]):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def test_the_cycle_finder_sees_a_cycle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_a_submodule_import_runs_its_package() -> None:
    graph = import_graph()
    assert "gradlint.rules" in graph["gradlint.engine"]
    assert "gradlint.model.events" in graph["gradlint.rules.base"]


def test_no_import_cycles_in_the_package() -> None:
    assert [c for c in cycles(import_graph()) if c not in KNOWN_CYCLES] == []


def test_the_catalogue_is_at_the_bottom() -> None:
    assert import_graph()["gradlint.catalogue"] <= {"gradlint.diagnostics"}
