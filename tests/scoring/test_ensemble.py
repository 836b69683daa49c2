"""Several checkpoints scored as one ensemble (pecan predict A.pt B.pt): the mean of the members' probabilities,
one pass over the poses, the members' settings each checked, the split from every member's record."""

import json
import sys

import numpy as np
import pandas as pd
import pytest
import torch

from pecan import config as cfgmod
from pecan.config import ConfigError
from pecan.engine.distributed import discover
from pecan.engine.state import CheckpointState
from pecan.scoring.ensemble import MeanProbability, ensemble_state, merged_record
from pecan.scoring.shards import metrics_path, run_predict
from pecan.train import checkpoint as ckpt
from tests.procs import run_checked

CPU = torch.device("cpu")


@pytest.fixture(scope="module")
def members(trained_run, tmp_path_factory):
    """(tmp, yaml, config, first checkpoint, second checkpoint): the second is the first with its weights
    moved (another model of the same settings) and a training record of other complexes."""
    tmp = tmp_path_factory.mktemp("ensemble")
    path, config = trained_run.copy_to(tmp, "train.epochs=1")
    state = ckpt.load_checkpoint(trained_run.checkpoint)
    generator = torch.Generator().manual_seed(3)
    moved = {
        name: value + 0.3 * torch.randn(value.shape, generator=generator) if value.is_floating_point() else value
        for name, value in state["model"].items()
    }
    train = state["complexes"]["train"]
    record = {"train": [*train[1:], *state["complexes"]["val"]], "val": [train[0]]}
    ckpt.save_checkpoint(tmp / "second.pt", dict(state, model=moved, complexes=record))
    return tmp, path, config, trained_run.checkpoint, tmp / "second.pt"


def score(config, checkpoints, out):
    values = run_predict(config, discover({}), CPU, [str(c) for c in checkpoints], str(out))
    return pd.read_csv(out).set_index(["complex_id", "pose_id"]).sort_index(), values


def test_the_ensemble_score_is_the_mean_of_the_members_probabilities(members):
    tmp, _, config, first, second = members
    alone_a, _ = score(config, [first], tmp / "a.csv")
    alone_b, _ = score(config, [second], tmp / "b.csv")
    both, values = score(config, [first, second], tmp / "ab.csv")
    assert not np.allclose(alone_a["pecan_score"], alone_b["pecan_score"], atol=1e-3)  # two different models
    mean = (alone_a["pecan_score"] + alone_b["pecan_score"]) / 2
    np.testing.assert_allclose(both["pecan_score"], mean, rtol=1e-5, atol=1e-6)
    for _, group in both.groupby("complex_id"):  # ranks follow the ensemble's scores
        assert group.sort_values("pecan_rank")["pecan_score"].is_monotonic_decreasing
    assert values["checkpoints"] == [str(first), str(second)] and "checkpoint" not in values
    assert json.loads(metrics_path(tmp / "ab.csv").read_text())["checkpoints"] == values["checkpoints"]
    # the first member's validation complex that the second trained on is 'train' for the ensemble
    moved = ckpt.load_checkpoint(first)["complexes"]["val"]
    splits = both.groupby("complex_id")["split"].first()
    assert moved and set(splits[splits.index.isin(moved)]) == {"train"}
    twice, _ = score(config, [first, first], tmp / "aa.csv")
    np.testing.assert_allclose(twice["pecan_score"], alone_a["pecan_score"], rtol=1e-5, atol=1e-6)


def test_a_member_trained_with_other_sample_settings_is_refused_naming_it(members):
    tmp, _, config, first, _ = members
    state = ckpt.load_checkpoint(first)
    other = dict(state, sample_settings={**state["sample_settings"], "data.edge_cutoff": 3.0})
    ckpt.save_checkpoint(tmp / "cutoff3.pt", other)
    with pytest.raises(ConfigError, match=r"cutoff3\.pt[\s\S]*data\.edge_cutoff: trained 3\.0, given 4\.5"):
        score(config, [first, tmp / "cutoff3.pt"], tmp / "never.csv")
    assert not (tmp / "never.csv").exists()


def test_pecan_predict_takes_several_checkpoints(members):
    tmp, path, _, first, second = members
    out = tmp / "cli.csv"
    done = run_checked(
        [sys.executable, "-m", "pecan", "predict", str(first), str(second), "--config", str(path), "--out", str(out)]
    )
    both, _ = score(cfgmod.load(path), [first, second], tmp / "direct.csv")
    scored = pd.read_csv(out).set_index(["complex_id", "pose_id"]).sort_index()
    np.testing.assert_allclose(scored["pecan_score"], both["pecan_score"], rtol=1e-6)
    assert "model AUC" in done.stdout


def test_mean_probability_is_exact_at_saturated_logits():
    class Fixed(torch.nn.Module):
        def __init__(self, values):
            super().__init__()
            self.values = torch.tensor(values)

        def forward(self, batch):
            return self.values

    ensemble = MeanProbability([Fixed([40.0, -40.0, 0.0, 2.0]), Fixed([40.0, -40.0, 0.0, -2.0])])
    logits = ensemble(None)
    assert torch.isfinite(logits).all()
    np.testing.assert_allclose(logits.numpy(), [40.0, -40.0, 0.0, 0.0], atol=1e-5)
    half = MeanProbability([Fixed([30.0]), Fixed([-30.0])])(None)  # one sure yes, one sure no: 0.5
    assert abs(float(half)) < 1e-5
    with pytest.raises(ValueError, match="at least one member"):
        MeanProbability([])


def test_merged_record_counts_a_complex_any_member_trained_on_as_train():
    merged = merged_record([{"train": ["a", "b"], "val": ["c"]}, {"train": ["c"], "val": ["d", "a"]}])
    assert merged == {"train": ["a", "b", "c"], "val": ["d"]}
    assert merged_record([{"train": ["a"], "val": []}, None]) is None  # a member without one: unknown


def structure_only(prop: str) -> CheckpointState:
    """A checkpoint state of a model that takes no docking score, trained on data recording ``prop``."""
    return CheckpointState(
        model={},
        model_config={"use_docking_score": False},
        training_data={"docking_score": {"property": prop}},
    )


def test_two_structure_only_members_are_one_ensemble_whatever_property_their_data_recorded(tmp_path):
    states = [structure_only("minimizedAffinity"), structure_only("docking_score")]
    merged = ensemble_state(states, [tmp_path / "a.pt", tmp_path / "b.pt"])
    assert merged.model_config == {"use_docking_score": False}


def test_members_reading_different_docking_scores_are_refused_naming_both(tmp_path):
    reads = CheckpointState(
        model={}, model_config={"use_docking_score": True}, training_data={"docking_score": {"property": "vina"}}
    )
    with pytest.raises(ConfigError, match=r"a\.pt reads SD property 'vina', .*b\.pt takes no docking score"):
        ensemble_state([reads, structure_only("vina")], [tmp_path / "a.pt", tmp_path / "b.pt"])
