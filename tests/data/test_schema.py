"""The model-input contract (pecan.data.schema): every reader and the worker hand-over produce exactly its fields
with its dtypes, and the contract and the models import nothing that reads files."""

import ast
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from pecan.data import schema
from pecan.data.loader import WireBatch, make_dataset, take_counts

READERS = ["reopen", "handle_cache", "hoist", "decode_cache", "packed"]
# Written out by hand, so that a field added to or dropped from the table without thought fails here.
EXPECTED = {
    "x": (torch.float32, (19,)),
    "pos": (torch.float32, (3,)),
    "vdw": (torch.float32, ()),
    "is_ligand": (torch.bool, ()),
    "edge_index": (torch.int64, (2,)),
    "edge_type": (torch.int64, ()),
    "y": (torch.float32, ()),
    "pose_features": (torch.float32, (5,)),
    "docking_features": (torch.float32, (3,)),
    "complex_code": (torch.int64, ()),
    "sample_id": (torch.int64, ()),
}


@pytest.fixture
def batches(setup):  # setup: tests/data/conftest.py
    """One batch of the same 4 samples from every reader."""
    cfg, frame, packs = setup
    return {
        mode: take_counts(make_dataset(cfg, frame, packs, io_mode=mode).__getitems__([3, 0, 5, 1]))[0]
        for mode in READERS
    }


def test_contract_table_is_the_hand_written_one():
    assert {f.name: (schema.torch_dtype(f), f.width) for f in schema.FIELDS} == EXPECTED
    assert schema.input_sizes() == {"in_features": 19, "edge_types": 3, "pose_features": 5}


@pytest.mark.parametrize("mode", READERS)
def test_every_reader_produces_exactly_the_contract(batches, mode):
    batch = batches[mode]
    assert set(batch.keys()) == set(EXPECTED) | {"batch", "ptr"}
    assert schema.check(batch) == []
    for name, (dtype, width) in EXPECTED.items():
        shape = tuple(batch[name].shape[:1]) if name == "edge_index" else tuple(batch[name].shape[1:])
        assert batch[name].dtype == dtype and shape == width, name
    assert batch.y.shape == (4,) and batch.sample_id.tolist() == [3, 0, 5, 1]


def test_wire_format_carries_the_contract(batches):
    batch = batches["packed"]
    batch.io_counts = torch.zeros(3, dtype=torch.int64)
    restored, counts = take_counts(WireBatch(batch).unpack())
    assert schema.check(restored) == [] and counts.tolist() == [0, 0, 0]
    for name in EXPECTED:
        assert torch.equal(restored[name], batch[name]), name


def test_check_names_a_departure(batches):
    batch = batches["reopen"]
    batch.edge_type = batch.edge_type.to(torch.int8)
    batch.extra = torch.zeros(4)
    del batch.vdw
    problems = schema.check(batch)
    assert "missing field vdw" in problems and "field extra is not in the contract" in problems
    assert any(p.startswith("field edge_type: torch.int8") for p in problems)


def imported_after(statement: str) -> set[str]:
    """Modules a fresh interpreter has loaded after ``statement``."""
    code = f"import sys; {statement}; print(' '.join(sys.modules))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    return set(done.stdout.split())


def test_contract_imports_no_file_readers_and_no_torch():
    loaded = imported_after("import pecan.data.schema")
    assert not loaded & {"pandas", "h5py", "torch", "torch_geometric"}


@pytest.mark.slow
def test_models_import_only_the_contract_of_pecan():
    loaded = imported_after("import model.egnn, model.sgcnn, model.ggcnn, model.cnn3d")
    assert "h5py" not in loaded
    # (pandas is loaded by torch_geometric itself, not by PECAN.) cnn3d's augmentation: the data path's rotation.
    pecan_modules = {m for m in loaded if m.startswith("pecan")}
    assert pecan_modules == {"pecan", "pecan.data", "pecan.data.schema", "pecan.data.rotation"}


@pytest.mark.slow
def test_graph_builder_imports_no_pandas_and_no_index():
    loaded = imported_after("import pecan.data.graph")
    assert not loaded & {"pandas", "h5py", "pecan.data.index"}


@pytest.mark.slow
def test_no_hidden_import_cycles():
    # Each pair was a cycle hidden by function-local imports: the lower module now imports none of the upper.
    # pecan.config.checks is inside the config package, so importing it loads the package's __init__; the
    # check is that checks itself never imports the Config assembly (type-checking imports aside).
    source = (Path(__file__).resolve().parents[2] / "pecan" / "config" / "checks.py").read_text()
    tree = ast.parse(source.replace("if TYPE_CHECKING:", "if False:"))
    runtime_nodes = [n for n in ast.walk(tree) if not (isinstance(n, ast.If) and isinstance(n.test, ast.Constant))]
    skipped = {
        id(c) for n in ast.walk(tree) if isinstance(n, ast.If) and isinstance(n.test, ast.Constant) for c in ast.walk(n)
    }
    imported = {n.module for n in runtime_nodes if isinstance(n, ast.ImportFrom) and id(n) not in skipped}
    assert "pecan.config" not in imported and "pecan.config.checks" not in imported
    assert "pecan.data.index" not in imported_after("import pecan.data.validation")
