"""benchmarks/ and studies/ use pecan through its public names only, and are packages run with ``python -m``: every
module parsed, no ``from pecan... import _private``, no ``pecan.x._private`` (through any name an import of pecan
bound), no ``sys.path`` edits."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
TOPS = ("benchmarks", "studies")


def _private(name: str) -> bool:
    """A name starting with one underscore (``__dunder__`` names and ``__name`` are not pecan's privates)."""
    return name.startswith("_") and not name.startswith("__")


def _is_pecan(module: str | None) -> bool:
    return module is not None and (module == "pecan" or module.startswith("pecan."))


def _dotted(node: ast.AST) -> list[str] | None:
    """``a.b.c`` as ["a", "b", "c"]; None when the chain does not start at a plain name."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return [node.id, *reversed(parts)]


def violations(source: str, filename: str = "<source>") -> list[str]:
    """``file:line: what`` for each private pecan name used and each sys.path edit in ``source``."""
    tree = ast.parse(source, filename)
    found = []
    pecan_names: set[str] = set()  # names an import of pecan (or of something from it) bound in this file
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if _is_pecan(alias.name):
                    pecan_names.add(alias.asname or alias.name.split(".")[0])
                    if alias.asname and any(_private(part) for part in alias.name.split(".")):
                        found.append(f"{filename}:{node.lineno}: import {alias.name} (a private module)")
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and _is_pecan(node.module):
            for part in node.module.split("."):
                if _private(part):
                    found.append(f"{filename}:{node.lineno}: from {node.module} import ... (a private module)")
            for alias in node.names:
                pecan_names.add(alias.asname or alias.name)
                if _private(alias.name):
                    found.append(f"{filename}:{node.lineno}: from {node.module} import {alias.name}")
    inner = {id(node.value) for node in ast.walk(tree) if isinstance(node, ast.Attribute)}
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute) or id(node) in inner:  # each chain once, at its outermost name
            continue
        chain = _dotted(node)
        if chain is None:
            continue
        if chain[:2] == ["sys", "path"] and len(chain) == 3 and chain[2] in ("insert", "append", "extend"):
            found.append(f"{filename}:{node.lineno}: sys.path.{chain[2]}")
        elif chain[0] in pecan_names and any(_private(part) for part in chain[1:]):
            found.append(f"{filename}:{node.lineno}: {'.'.join(chain)}")
    return sorted(set(found), key=lambda line: (int(line.split(":")[1]), line))


def python_files() -> list[Path]:
    """Every .py file under benchmarks/ and studies/ (unpacked study data and virtual environments aside)."""
    files = []
    for top in TOPS:
        for path in sorted((ROOT / top).rglob("*.py")):
            relative = path.relative_to(ROOT).parts
            if any(part.startswith(".") or part in ("results", "work", "__pycache__") for part in relative):
                continue
            files.append(path)
    return files


def test_the_study_and_benchmark_files_are_found():
    names = {path.relative_to(ROOT).as_posix() for path in python_files()}
    assert "studies/realdock/run.py" in names
    assert "benchmarks/bench_score.py" in names


@pytest.mark.parametrize("path", python_files(), ids=lambda path: path.relative_to(ROOT).as_posix())
def test_public_names_only(path):
    """A study or benchmark that needs a pecan name gets it made public in its module, not reached for."""
    found = violations(path.read_text(encoding="utf-8"), path.relative_to(ROOT).as_posix())
    assert not found, "private pecan names or sys.path edits:\n" + "\n".join(found)


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        (
            "from pecan.convert.complexes import _with_hydrogens\n",
            ["x.py:1: from pecan.convert.complexes import _with_hydrogens"],
        ),
        ("from pecan.convert import complexes\ncomplexes._with_hydrogens(m)\n", ["x.py:2: complexes._with_hydrogens"]),
        (
            "import pecan.convert.complexes\npecan.convert.complexes._helper\n",
            ["x.py:2: pecan.convert.complexes._helper"],
        ),
        ("import pecan.redock.ranking as ranking\nranking._cut(1)\n", ["x.py:2: ranking._cut"]),
        ("from pecan.runtime import _hidden as h\n", ["x.py:1: from pecan.runtime import _hidden"]),
        ("from pecan._internal import thing\n", ["x.py:1: from pecan._internal import ... (a private module)"]),
        ("import sys\nsys.path.insert(0, 'x')\n", ["x.py:2: sys.path.insert"]),
        ("import sys\n\nsys.path.append('x')\n", ["x.py:3: sys.path.append"]),
        # a private name of another package, pecan's dunders and public names are fine
        ("import numpy as np\nnp._NoValue\nfrom pecan import report\nreport.__name__\nreport.write\n", []),
        ("from pecan.redock.ranking import summarize\nframe._private\n", []),
    ],
)
def test_violations_are_found_and_named(source, expected):
    assert violations(source, "x.py") == expected
