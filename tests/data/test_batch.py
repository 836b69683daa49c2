"""The readers' batch without PyG (pecan.data.batch): it holds exactly the tensors of PyG's ``Batch`` of the same
samples, the models score both alike, it behaves as the loader and the trainer use a Batch, and the EGNN
training and prediction paths never import PyG."""

import sys

import numpy as np
import pytest
import torch
from torch_geometric.data import Batch, Data

import model as registry
from model.egnn import EGNNConfig
from pecan.data.batch import GraphBatch, concat
from pecan.data.loader import make_dataset, take_counts
from tests.procs import run_ok

ROWS = [3, 0, 5, 1]


def pyg_batch(samples: list[GraphBatch]) -> Batch:
    """PyG's own ``Batch.from_data_list`` of the same one-graph samples."""
    return Batch.from_data_list([Data(**sample.fields()) for sample in samples])


def assert_same(mine, theirs) -> None:
    assert set(mine.keys()) == set(theirs.keys()) and mine.num_graphs == theirs.num_graphs
    for name in theirs.keys():
        assert mine[name].dtype == theirs[name].dtype, name
        assert torch.equal(mine[name], theirs[name]), name


@pytest.mark.parametrize("mode", ["handle_cache", "packed"])
def test_each_readers_batch_is_pygs_batch_of_its_samples(setup, mode):
    cfg, frame, packs = setup
    dataset = make_dataset(cfg, frame, packs, io_mode=mode)
    mine, _ = take_counts(dataset.__getitems__(ROWS))
    samples = [take_counts(make_dataset(cfg, frame, packs, io_mode="reopen").__getitems__([i]))[0] for i in ROWS]
    for sample in samples:  # one-graph batches: PyG's Data is the sample without the batch's bookkeeping
        del sample.batch, sample.ptr
    theirs = pyg_batch(samples)
    assert_same(mine, theirs)
    torch.manual_seed(0)
    egnn = registry.build_model("egnn", EGNNConfig(hidden=16, layers=2, update_coords=True)).eval()
    with torch.no_grad():
        assert torch.equal(egnn(mine), egnn(theirs))


def test_concat_is_from_data_list_for_graphs_of_other_sizes():
    from pecan.data.graph import build_graph
    from pecan.data.h5dataset import graph_to_data
    from tests.model.variant_batches import sample_values, tiny_atoms

    samples = []
    for k, cut in enumerate((100.0, 5.0, 100.0)):  # the middle graph is cropped: sizes differ
        graph = build_graph(tiny_atoms(k), pocket_radius=cut, edge_cutoff=4.5)
        samples.append(graph_to_data(graph, sample_values(1.0, np.arange(5, dtype=np.float32), k, 10 + k)))
    assert len({s.num_nodes for s in samples}) > 1
    assert_same(concat(samples), pyg_batch(samples))


def test_fields_are_attributes_and_keys_alike():
    batch = GraphBatch({"x": torch.zeros(3, 2), "y": torch.ones(2)}, 2)
    assert batch.keys() == ["x", "y"] and "num_graphs" not in batch and "x" in batch
    batch.io_counts = torch.arange(3)
    assert "io_counts" in batch and torch.equal(batch["io_counts"], torch.arange(3))
    del batch.io_counts
    assert batch.keys() == ["x", "y"] and batch.num_nodes == 3
    with pytest.raises(KeyError):
        batch["num_graphs"]
    moved = batch.to("cpu")
    assert moved.keys() == batch.keys() and moved.num_graphs == 2 and torch.equal(moved.x, batch.x)
    empty = concat([])
    assert empty.num_graphs == 0 and empty.keys() == []


def test_pin_memory_pins_every_field(monkeypatch):
    # CPU-only torch cannot pin; what matters is that every field goes through Tensor.pin_memory.
    pinned = []
    monkeypatch.setattr(torch.Tensor, "pin_memory", lambda self: pinned.append(self) or self.clone())
    batch = GraphBatch({"x": torch.zeros(3, 2), "y": torch.ones(2)}, 2)
    again = batch.pin_memory()
    assert len(pinned) == 2 and again.keys() == ["x", "y"] and again.num_graphs == 2


@pytest.mark.slow
def test_the_egnn_training_and_predict_paths_never_import_pyg(make_config, tmp_path):
    """A whole EGNN run (main_app training with a loader worker, then pecan predict on its checkpoint):
    no module of torch_geometric is ever loaded (its import costs each process start-up time)."""
    path, config = make_config({"train.epochs": 1, "data.num_workers": 1, "train.max_steps_per_epoch": 2})
    train = [str(path)]
    predict = [f"{config.train.out_dir}/checkpoints/last.pt", "--config", str(path), "--out", str(tmp_path / "s.csv")]
    code = (
        "import sys, main_app\n"
        "from pecan.commands import predict\n"
        f"code = main_app.main({train!r}) or predict.main({predict!r})\n"
        "print('pyg modules:', sorted(m for m in sys.modules if m.split('.')[0] == 'torch_geometric'))\n"
        "sys.exit(code)\n"
    )
    out = run_ok([sys.executable, "-c", code], timeout=300)
    assert "pyg modules: []" in out and (tmp_path / "s.csv").exists(), out[-3000:]
