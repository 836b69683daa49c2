"""The import graph of pecan/ and model/: every module parsed, function-local imports included (``if
TYPE_CHECKING:`` blocks are not imports at run time), no cycle between modules nor between packages, and the
floors docs/architecture.md draws."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def module_files(root: Path = ROOT, tops: tuple[str, ...] = ("pecan",)) -> dict[str, Path]:
    """Dotted module name -> file for every module under the ``tops`` folders (a package is its __init__.py)."""
    modules = {}
    for path in sorted(p for top in tops for p in (root / top).rglob("*.py")):
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


def import_graph(root: Path = ROOT, tops: tuple[str, ...] = ("pecan",)) -> dict[str, set[str]]:
    """Module -> the modules of ``tops`` it imports anywhere in its body (a name resolves to its longest module)."""
    modules = module_files(root, tops)

    def resolve(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph = {}
    for name, path in modules.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        imported = _imported_names(ast.parse(path.read_text()), package)
        targets = {resolve(n) for n in imported if n.split(".")[0] in tops}
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


def test_training_and_scoring_import_nothing_of_each_other(graph):
    """What both need (checkpoint I/O, device and process set-up, AMP, the evaluation loop, the pins) is
    pecan.engine, one floor below them."""
    assert importers_of(graph, "pecan.train", "pecan.scoring") == []
    assert importers_of(graph, "pecan.scoring", "pecan.train") == []


def package_of(module: str, root: Path = ROOT) -> str:
    """The package a module belongs to: ``model``, ``pecan.<subpackage>``, or a module at pecan's top level
    (``python -m pecan`` is the command line)."""
    parts = module.split(".")
    if parts[0] != "pecan":
        return parts[0]
    if module == "pecan.__main__":
        return "pecan.cli"
    if len(parts) > 1 and (root / "pecan" / parts[1]).is_dir():
        return ".".join(parts[:2])
    return module


def package_graph(root: Path = ROOT) -> dict[str, set[str]]:
    """Package -> the packages its modules import (pecan/ and model/, function-local imports included)."""
    packages: dict[str, set[str]] = {}
    for module, targets in import_graph(root, ("pecan", "model")).items():
        packages.setdefault(package_of(module, root), set()).update(package_of(t, root) for t in targets)
    return {package: targets - {package} for package, targets in packages.items()}


# docs/architecture.md: every package stands on one floor and imports only packages on floors below it.
FLOORS = {
    "pecan.runtime": 1,
    "pecan.data": 2,
    "pecan.report": 2,
    "model": 3,
    "pecan.config": 4,
    "pecan.engine": 5,
    "pecan.convert": 5,
    "pecan.plots": 5,
    "pecan.train": 6,
    "pecan.scoring": 6,
    "pecan.redock": 6,
    "pecan.synthetic": 6,
    "pecan.runs": 6,
    "pecan.pretrained": 6,
    # the data-set readers write redock and convert manifests and check each ligand as pecan redock reads it
    "pecan.sources": 6.5,
    "pecan.commands": 7,
    "pecan.cli": 7,
    "pecan": 7,
}


@pytest.fixture(scope="module")
def packages():
    return package_graph()


def test_no_package_import_cycle(packages):
    assert cycles(packages) == []


def test_every_package_imports_only_lower_floors(packages):
    assert set(packages) <= set(FLOORS), "place a new package on a floor here and in docs/architecture.md"
    upward = sorted(f"{p} -> {t}" for p, targets in packages.items() for t in targets if FLOORS[t] >= FLOORS[p])
    assert upward == []


def test_the_package_graph_sees_loops_through_function_local_imports(tmp_path):
    for folder, text in {
        "pecan/data": "def f():\n    import model\n",
        "pecan/train": "from pecan.data import x\n",
        "model": "from pecan.train import y\n",
    }.items():
        (tmp_path / folder).mkdir(parents=True)
        (tmp_path / folder / "__init__.py").write_text("")
        (tmp_path / folder / ("x.py" if folder == "pecan/data" else "y.py")).write_text(text)
    (tmp_path / "pecan" / "__init__.py").write_text("")
    graph = package_graph(tmp_path)
    assert graph["pecan.data"] == {"model"} and graph["model"] == {"pecan.train"}
    assert cycles(graph) == [["model", "pecan.data", "pecan.train"]]


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
