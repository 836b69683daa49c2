"""model.use_docking_score: the docking features from the index, through both readers, into the EGNN head."""

import numpy as np
import pandas as pd
import pytest
import torch

from model.egnn import DOCKING_FEATURES, EGNNClassifier, build, input_sizes
from pecan.config import ModelConfig
from pecan.data import packed
from pecan.data.sample import DOCKING_FEATURES as DATA_DOCKING_FEATURES
from pecan.data.sample import SampleTable, docking_features
from tests.model.test_egnn import make_batch


def test_features_are_hand_computed_per_complex():
    frame = pd.DataFrame({"complex_id": ["a", "a", "a", "b"], "docking_score": [-9.0, -7.0, np.nan, -5.0]})
    expected = np.array([[-0.9, 0.0, 0.0], [-0.7, 0.4, 0.0], [0.0, 0.0, 1.0], [-0.5, 0.0, 0.0]], np.float32)
    np.testing.assert_allclose(docking_features(frame), expected, atol=1e-6)
    gap = docking_features(pd.DataFrame({"complex_id": ["a", "a"], "docking_score": [-30.0, 0.0]}))
    assert gap[1, 1] == 4.0  # the gap to the best score is clipped at 20 kcal/mol


def test_an_index_without_scores_marks_every_pose_missing():
    features = docking_features(pd.DataFrame({"complex_id": ["a", "b"]}))
    assert features.tolist() == [[0.0, 0.0, 1.0], [0.0, 0.0, 1.0]]


def test_the_model_and_data_agree_on_the_width():
    assert DOCKING_FEATURES == DATA_DOCKING_FEATURES == 3


def test_packed_batches_carry_the_features():
    arrays = {
        "x": np.zeros((3, 19), np.float32),
        "pos": np.zeros((3, 3), np.float32),
        "vdw": np.zeros(3, np.float32),
        "edge_index": np.zeros((2, 0), np.int64),
        "edge_type": np.zeros(0, np.int8),
        "atom_counts": np.array([1, 2], np.int64),
    }
    values = {
        "y": np.float32([1, 0]),
        "pose_features": np.zeros((2, 5), np.float32),
        "complex_code": np.array([7, 9]),
        "sample_id": np.array([0, 1]),
    }
    given = np.float32([[-0.8, 0.0, 0.0], [-0.6, 0.4, 0.0]])
    batch = packed.to_batch(arrays, {**values, "docking_features": given})
    np.testing.assert_array_equal(batch.docking_features.numpy(), given)
    table = SampleTable(
        shards=["s"],
        shard_id=np.zeros(2, np.int32),
        complex_id=np.array(["a", "b"], object),
        pose_id=np.array(["p", "q"], object),
        is_crystal=np.zeros(2, bool),
        label=np.float32([1, 0]),
        pose_features=np.zeros((2, 5), np.float32),
        complex_code=np.array([0, 1]),
    )
    missing = packed.to_batch(arrays, table.sample_field_values(np.array([0, 1])))  # a table without scores
    assert missing.docking_features[:, 2].tolist() == [1.0, 1.0]


def test_sample_table_reads_the_index_score_column():
    frame = pd.DataFrame(
        {
            "shard": ["s"] * 2,
            "complex_id": ["a", "a"],
            "pose_id": ["p1", "p2"],
            "is_crystal": [0, 0],
            "label": [1, 0],
            "docking_score": [-8.0, -6.0],
            "num_hbonds": 0,
            "hpbond": 0,
            "habond": 0,
            "sbond": 0,
            "pbond": 0,
        }
    )
    assert SampleTable.from_index(frame).docking_features[:, 1].tolist() == pytest.approx([0.0, 0.4])


def _with_docking(batch, values):
    batch.docking_features = torch.tensor(values, dtype=torch.float32)
    return batch


def test_off_ignores_the_features_on_uses_them_and_trains_them():
    torch.manual_seed(0)
    off = EGNNClassifier(**input_sizes(), hidden=16, layers=1)
    torch.manual_seed(0)
    on = EGNNClassifier(**input_sizes(), hidden=16, layers=1, use_docking_score=True)
    assert on.head[0].in_features == off.head[0].in_features + 3
    first = _with_docking(make_batch(), [[-0.9, 0.0, 0.0], [-0.5, 0.8, 0.0]])
    second = _with_docking(make_batch(), [[-0.1, 2.0, 0.0], [0.0, 0.0, 1.0]])
    assert torch.equal(off(first), off(second))
    logits = on(first)
    assert logits.shape == (2,) and not torch.allclose(logits, on(second))
    logits.sum().backward()
    assert on.head[0].weight.grad[:, -3:].abs().sum() > 0


def test_config_key_defaults_off_and_builds_through_the_registry():
    assert ModelConfig().use_docking_score is False
    model = build(ModelConfig(hidden=8, layers=1, use_docking_score=True), input_sizes())
    assert model.use_docking_score and model.head[0].in_features == 2 * 8 + 5 + 3


def test_hdf5_reader_data_carries_the_features_or_marks_them_missing():
    from pecan.data.graph import build_graph
    from pecan.data.h5dataset import graph_to_data
    from tests.model.variant_batches import tiny_atoms

    graph = build_graph(tiny_atoms(0), pocket_radius=100.0, edge_cutoff=4.5)
    values = {
        "y": np.float32([1.0]),
        "pose_features": np.zeros((1, 5), np.float32),
        "complex_code": np.array([0]),
        "sample_id": np.array([0]),
    }
    given = graph_to_data(graph, {**values, "docking_features": np.float32([[-0.7, 0.4, 0.0]])})
    np.testing.assert_allclose(given.docking_features.numpy(), [[-0.7, 0.4, 0.0]], rtol=1e-6)
    with pytest.raises(KeyError, match="docking_features"):  # the contract names a field a reader forgot
        graph_to_data(graph, values)


def test_the_prior_starts_as_the_docking_score_ranking_and_learns_corrections():
    torch.manual_seed(0)
    model = EGNNClassifier(**input_sizes(), hidden=16, layers=1, use_docking_score=True, docking_prior=2.0)
    batch = _with_docking(make_batch(), [[-0.9, 0.0, 0.0], [-0.5, 0.8, 0.0]])
    logits = model(batch)
    # Head output zero at the start: the logits are -2 * gap exactly (0 for the best pose, -1.6 for the other).
    assert logits.tolist() == pytest.approx([0.0, -1.6], abs=1e-6)
    torch.nn.functional.binary_cross_entropy_with_logits(logits, torch.tensor([0.0, 1.0])).backward()
    # d/dw of BCE: sum over poses of (sigmoid(l) - y) * (-gap) / 2 = ((0.5 - 0) * 0 + (sigmoid(-1.6) - 1) * -0.8) / 2
    expected = (torch.sigmoid(torch.tensor(-1.6)).item() - 1.0) * -0.8 / 2
    assert model.docking_prior.grad.item() == pytest.approx(expected, rel=1e-5)
    assert model.head[-1].weight.grad.abs().sum() > 0  # the correction trains from the first step
    model.head[-1].weight.data.fill_(1.0)
    model.reset_parameters()
    assert model.head[-1].weight.abs().sum() == 0 and model.docking_prior.item() == 2.0


def test_the_prior_needs_the_docking_score_and_is_off_by_default():
    from model.egnn_config import EGNNConfig

    assert EGNNConfig().docking_prior == 0.0
    assert EGNNClassifier(**input_sizes(), hidden=8, layers=1).docking_prior is None
    assert ("model.docking_prior", "needs model.use_docking_score: true (the prior reads the docking score)") in (
        EGNNConfig(docking_prior=1.0).problems(None)
    )
    assert EGNNConfig(docking_prior=-1.0).problems(None)[0][0] == "model.docking_prior"
    model = build(ModelConfig(hidden=8, layers=1, use_docking_score=True, docking_prior=1.5), input_sizes())
    assert model.docking_prior.item() == 1.5
