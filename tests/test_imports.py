"""The import graph of pecan/: every module parsed, function-local imports included (``if TYPE_CHECKING:``
blocks are not imports at run time), no cycle between modules, and the layers the architecture names."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def module_files(root: Path = ROOT) -> dict[str, Path]:
    """Dotted module name -> file for every module under pecan/ (a package is its __init__.py)."""
    modules = {}
    for path in sorted((root / "pecan").rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join(parts)] = path
    return modules


def _type_checking_only(node: ast.AST) -> bool:
    test = getattr(node, "test", None)
    return isinstance(node, ast.If) and (
        (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING")
        or (isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")
    )


def _imported_names(tree: ast.AST, package: str) -> set[str]:
    names: set[str] = set()
    pending = [tree]
    while pending:
        node = pending.pop()
        if _type_checking_only(node):
            pending.extend(node.orelse)
            continue
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(parts + ([base] if base else []))
            names.update(f"{base}.{alias.name}" for alias in node.names)  # a name, else its module
        pending.extend(ast.iter_child_nodes(node))
    return names


def import_graph(root: Path = ROOT) -> dict[str, set[str]]:
    """Module -> the pecan modules it imports anywhere in its body (a name resolves to its longest module)."""
    modules = module_files(root)

    def resolve(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        targets = {resolve(n) for n in _imported_names(ast.parse(path.read_text()), package) if n.startswith("pecan")}
        graph[name] = {t for t in targets if t and t != name}
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
        for target in sorted(graph.get(node, ())):
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


@pytest.fixture(scope="module")
def graph():
    return import_graph()


def test_no_module_import_cycle(graph):
    assert cycles(graph) == []


def importers_of(graph, importer_prefix: str, imported_prefix: str) -> list[str]:
    return sorted(
        f"{m} -> {t}"
        for m, targets in graph.items()
        if m == importer_prefix or m.startswith(importer_prefix + ".")
        for t in targets
        if t == imported_prefix or t.startswith(imported_prefix + ".")
    )


@pytest.mark.parametrize("package", ["pecan.scoring", "pecan.train", "pecan.data", "pecan.convert"])
def test_library_packages_never_import_the_commands(graph, package):
    assert importers_of(graph, package, "pecan.commands") == []


def test_training_uses_only_the_scoring_modules_below_it(graph):
    """Training calls the evaluation loop and the checkpoint pins; those import nothing that imports training's
    trainer, so the scoring run can build on pecan.train without a loop."""
    used = {t for m in graph if m.startswith("pecan.train") for t in graph[m] if t.startswith("pecan.scoring")}
    assert used <= {"pecan.scoring", "pecan.scoring.evaluate", "pecan.scoring.settings"}
    for module in used:
        assert importers_of({module: graph[module]}, module, "pecan.train.trainer") == []


def test_the_checks_see_function_local_imports_and_cycles(tmp_path):
    package = tmp_path / "pecan"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("def f():\n    from pecan import b\n")
    (package / "b.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import pecan.c\nimport pecan.a\n"
    )
    (package / "c.py").write_text("from . import b\n")
    graph = import_graph(tmp_path)
    assert graph["pecan.a"] == {"pecan.b"} and graph["pecan.b"] == {"pecan.a"} and graph["pecan.c"] == {"pecan.b"}
    assert cycles(graph) == [["pecan.a", "pecan.b"]]
