"""Every registered variant trains and scores: `pecan predict CKPT` rebuilds it from the checkpoint alone, and
its scores equal those of `pecan predict CKPT --config CONFIG` (the YAML path) on the same poses."""

import json

import numpy as np
import pandas as pd
import pytest

import main_app
from pecan.commands import predict as predict_command
from pecan.scoring.shards import SCORE_COLUMNS, metrics_path
from pecan.train import checkpoint as ckpt
from tests.train.helpers import tiny_run

TINY_MODELS = {
    "egnn": {"name": "egnn", "hidden": 16, "layers": 2, "rbf": 8},
    "sgcnn": {"name": "sgcnn", "covalent_gather_width": 16, "noncovalent_gather_width": 16, "noncovalent_cutoff": 4.5},
    "ggcnn": {"name": "ggcnn", "gated_width": 16, "gated_steps": 2},
    "cnn3d": {"name": "cnn3d", "grid_size": 8, "resolution": 2.0, "channels": 4},
}


def train_variant(tmp_path, variant):
    """One epoch of ``variant`` on the tiny shards; returns (config path, checkpoint)."""
    path, _ = tiny_run(tmp_path, n_complexes=3, n_poses=4, settings={"model": TINY_MODELS[variant]})
    assert main_app.main([str(path), "--set", "train.epochs=1"]) == 0
    return path, tmp_path / "run" / "checkpoints" / "last.pt"


@pytest.mark.parametrize("variant", sorted(TINY_MODELS))
def test_each_variant_trains_and_scores_from_its_checkpoint(tmp_path, variant):
    config_path, checkpoint = train_variant(tmp_path, variant)
    state = ckpt.load_checkpoint(checkpoint)
    assert state["model_config"]["name"] == variant
    alone = tmp_path / "alone.csv"
    # No YAML: model, sample settings and label rule all come from the checkpoint.
    assert (
        predict_command.main(
            [str(checkpoint), "--data-dir", str(tmp_path / "data"), "--out", str(alone), "--device", "cpu"]
        )
        == 0
    )
    scores = pd.read_csv(alone)
    assert list(scores.columns) == list(SCORE_COLUMNS) and len(scores) == 2 * 3 * 4
    assert ((scores["pecan_score"] > 0) & (scores["pecan_score"] < 1)).all()
    record = state["complexes"]
    expected = np.where(scores["complex_id"].isin(record["train"]), "train", "val")
    assert scores["complex_id"].isin(record["train"] + record["val"]).all()
    assert list(scores["split"]) == list(expected)
    values = json.loads(metrics_path(alone).read_text())
    assert set(values["splits"]) == {"train", "val"}
    assert values["splits"]["val"]["complexes"] == len(record["val"])

    with_yaml = tmp_path / "yaml.csv"
    assert predict_command.main([str(checkpoint), "--config", str(config_path), "--out", str(with_yaml)]) == 0
    other = pd.read_csv(with_yaml)
    assert list(other["pose_id"]) == list(scores["pose_id"])
    np.testing.assert_allclose(other["pecan_score"], scores["pecan_score"], rtol=1e-6)


def test_a_ggcnn_checkpoint_that_stored_edge_types_still_scores_and_resumes(tmp_path, caplog):
    """Checkpoints written while ggcnn had an `edge_types` key store it in their model config; it is ignored."""
    from pecan import config as cfgmod

    config_path, checkpoint = train_variant(tmp_path, "ggcnn")
    state = ckpt.load_checkpoint(checkpoint)
    assert "edge_types" not in state["model_config"]
    state["model_config"]["edge_types"] = 3
    state["config"]["model"]["edge_types"] = 3
    ckpt.save_checkpoint(checkpoint, state)

    out = tmp_path / "scores.csv"
    with caplog.at_level("WARNING"):
        argv = [str(checkpoint), "--data-dir", str(tmp_path / "data"), "--out", str(out), "--device", "cpu"]
        assert predict_command.main(argv) == 0
    assert "'model.edge_types' is no longer a key of ggcnn" in caplog.text
    assert len(pd.read_csv(out)) == 2 * 3 * 4
    resumed = cfgmod.load(config_path, [f"train.resume={checkpoint}"])
    assert ckpt.check_resume_compatible(resumed) == checkpoint  # the stored key is not a difference
