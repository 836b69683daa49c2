"""Scoring you can trust: the checkpoint pins its sample settings, scoring is read-only and independent of
the training run's state, duplicate poses are named, and every score says which split its complex was in."""

import json
import logging

import numpy as np
import pandas as pd
import pytest
import torch

from pecan import config as cfgmod
from pecan.commands import predict
from pecan.config import ConfigError
from pecan.engine.distributed import discover
from pecan.engine.pins import check_settings, sample_settings
from pecan.runtime.errors import DataError
from pecan.scoring.shards import metrics_path, run_predict
from pecan.train import checkpoint as ckpt
from pecan.train.metrics import roc_auc, topk_success
from pecan.train.run_dir import RunLock
from tests.shards import write_shard

CPU = torch.device("cpu")


@pytest.fixture(scope="module")
def trained(trained_run, tmp_path_factory):
    """The session's one-epoch tiny run (edge_cutoff 4.5, pocket_radius 6.0) copied here; returns (tmp, yaml,
    config, the checkpoint copied out of out_dir)."""
    tmp = tmp_path_factory.mktemp("trust")
    path, config = trained_run.copy_to(tmp, "train.epochs=1")
    return tmp, path, config, trained_run.checkpoint


def score(config, checkpoint, out, allow=()):
    return run_predict(config, discover({}), CPU, str(checkpoint), str(out), allow)


def test_disagreeing_sample_settings_are_refused_naming_each_key(trained):
    tmp, path, _, checkpoint = trained
    state = ckpt.load_checkpoint(checkpoint)
    assert state["sample_settings"] == {"data.pocket_radius": 6.0, "data.edge_cutoff": 4.5}
    other = cfgmod.load(path, ["data.edge_cutoff=3.0", "data.pocket_radius=4.0"])
    with pytest.raises(ConfigError) as err:
        score(other, checkpoint, tmp / "never.csv")
    assert "data.edge_cutoff: trained 4.5, given 3.0" in str(err.value)
    assert "data.pocket_radius: trained 6.0, given 4.0" in str(err.value)
    assert "--allow-setting-change" in str(err.value) and not (tmp / "never.csv").exists()
    with pytest.raises(ConfigError, match="not a pinned setting.*data.edge_cutoff"):
        score(other, checkpoint, tmp / "never.csv", allow=("data.edge_cutof",))


def test_an_allowed_change_scores_with_a_warning(trained, caplog):
    tmp, path, _, checkpoint = trained
    other = cfgmod.load(path, ["data.edge_cutoff=3.0"])
    with caplog.at_level(logging.WARNING):
        score(other, checkpoint, tmp / "changed.csv", allow=("data.edge_cutoff",))
    assert "data.edge_cutoff: scoring with 3.0, the model was trained with 4.5" in caplog.text
    assert len(pd.read_csv(tmp / "changed.csv")) == 48


def test_the_command_line_refusal_exits_2(trained, capsys):
    tmp, path, _, checkpoint = trained
    code = predict.main(
        [str(checkpoint), "--config", str(path), "--set", "data.edge_cutoff=3.0", "--out", str(tmp / "cli.csv")]
    )
    assert code == 2 and not (tmp / "cli.csv").exists()


def test_old_checkpoint_loads_with_a_warning_listing_what_was_assumed(trained, caplog):
    tmp, path, config, checkpoint = trained
    state = ckpt.load_checkpoint(checkpoint)
    old = {k: v for k, v in state.items() if k not in ("sample_settings", "complexes", "best")}
    ckpt.save_checkpoint(tmp / "old.pt", old)
    with caplog.at_level(logging.WARNING):
        score(config, tmp / "old.pt", tmp / "old.csv")
    assert "predates pinned sample settings; assumed: data.pocket_radius=6.0 (its stored run config)" in caplog.text
    assert "split column is 'unknown'" in caplog.text
    assert set(pd.read_csv(tmp / "old.csv")["split"]) == {"unknown"}
    # The stored run config still pins: a disagreeing config is refused as for a new checkpoint.
    with pytest.raises(ConfigError, match="data.edge_cutoff: trained 4.5, given 3.0"):
        score(cfgmod.load(path, ["data.edge_cutoff=3.0"]), tmp / "old.pt", tmp / "never.csv")
    oldest = {k: v for k, v in old.items() if k != "config"}
    ckpt.save_checkpoint(tmp / "oldest.pt", oldest)
    caplog.clear()
    with caplog.at_level(logging.WARNING):
        score(config, tmp / "oldest.pt", tmp / "oldest.csv")
    assert "data.edge_cutoff=4.5 (the given config's)" in caplog.text


def test_the_voxel_grid_is_a_pinned_setting_of_cnn3d():
    config = cfgmod.from_dict({"data": {"data_dir": "d"}, "model": {"name": "cnn3d", "grid_size": 16}})
    trained = sample_settings(config)
    assert trained == {
        "data.pocket_radius": 6.0,
        "data.edge_cutoff": 4.5,
        "model.grid_size": 16,
        "model.resolution": 1.0,
        "model.radius_scale": 1.0,
    }
    with pytest.raises(ConfigError, match="model.grid_size: trained 16, given 24"):
        check_settings(trained, {**trained, "model.grid_size": 24}, (), "ckpt.pt")
    assert check_settings(trained, {**trained, "model.grid_size": 24}, ("model.grid_size",), "ckpt.pt") == [
        "model.grid_size"
    ]


def test_scoring_ignores_the_run_state_in_out_dir(trained):
    """A damaged last.pt, a held lock and a differing model section in the YAML change nothing."""
    tmp, path, config, checkpoint = trained
    reference = tmp / "reference.csv"
    score(config, checkpoint, reference)
    run_dir = tmp / "run"
    (run_dir / "checkpoints" / "last.pt").write_bytes(b"not a checkpoint")
    before = sorted(p.relative_to(run_dir) for p in run_dir.rglob("*"))
    lock = RunLock(run_dir).acquire()
    try:
        out = tmp / "independent.csv"
        code = predict.main([str(checkpoint), "--config", str(path), "--set", "model.hidden=40", "--out", str(out)])
        assert code == 0
    finally:
        lock.release()
    assert sorted(p.relative_to(run_dir) for p in run_dir.rglob("*")) == before
    np.testing.assert_allclose(pd.read_csv(out)["pecan_score"], pd.read_csv(reference)["pecan_score"], rtol=1e-6)


def test_duplicate_poses_across_inputs_name_both_shards(trained):
    tmp, path, _, checkpoint = trained
    (tmp / "dup").mkdir(exist_ok=True)
    first, second = tmp / "dup" / "first.hdf5", tmp / "dup" / "second.hdf5"
    # The second shard holds the first one's complexes and one more: not a byte copy (that is refused earlier,
    # as the same data under two names), but the same complex/pose pairs in two shards.
    write_shard(first, n_complexes=2, n_poses=3, seed=4, prefix="d")
    write_shard(second, n_complexes=3, n_poses=3, seed=4, prefix="d")
    config = cfgmod.load(path, [f"data.test_fns=[{first}, {second}]"])
    with pytest.raises(DataError) as err:
        score(config, checkpoint, tmp / "never.csv")
    assert "d400" in str(err.value) and str(first) in str(err.value) and str(second) in str(err.value)


def test_split_column_and_per_split_metrics(trained, capsys, caplog):
    tmp, _, config, checkpoint = trained
    state = ckpt.load_checkpoint(checkpoint)
    record = state["complexes"]
    assert len(record["train"]) == 6 and len(record["val"]) == 2 and not set(record["train"]) & set(record["val"])
    # One validation complex left out of the record: the data holds it, the checkpoint does not know it.
    forgotten = record["val"][0]
    edited = dict(state, complexes={"train": record["train"], "val": record["val"][1:]})
    ckpt.save_checkpoint(tmp / "edited.pt", edited)
    out = tmp / "splits.csv"
    with caplog.at_level(logging.WARNING):
        values = score(config, tmp / "edited.pt", out)
    scores = pd.read_csv(out)
    expected = {c: "train" for c in record["train"]} | {c: "val" for c in record["val"][1:]} | {forgotten: "unseen"}
    assert dict(zip(scores["complex_id"], scores["split"])) == expected
    for split in ("train", "val", "unseen"):
        part = scores[scores["split"] == split]
        labels = part["label"].to_numpy()
        got = values["splits"][split]
        assert got["poses"] == len(part) and got["complexes"] == part["complex_id"].nunique()
        assert got["auc"] == pytest.approx(roc_auc(part["pecan_score"].to_numpy(), labels), nan_ok=True)
        assert got["top3"] == pytest.approx(
            topk_success(part["pecan_score"].to_numpy(), labels, part["complex_id"].to_numpy(), 3), nan_ok=True
        )
        assert got["docking_auc"] == pytest.approx(roc_auc(-part["docking_score"].to_numpy(), labels), nan_ok=True)
    assert "6 of the 8 scored complexes were used to train this checkpoint" in caplog.text
    printed = capsys.readouterr().out.splitlines()
    assert [line.split(":")[0].strip() for line in printed[:4]] == ["val", "unseen", "train", "all"]
    assert json.loads(metrics_path(out).read_text())["splits"]["val"]["complexes"] == 1


def test_test_inputs_are_the_test_split(trained):
    tmp, path, _, checkpoint = trained
    (tmp / "held").mkdir(exist_ok=True)
    write_shard(tmp / "held" / "held.hdf5", n_complexes=3, n_poses=4, seed=9, prefix="t")
    out = tmp / "held.csv"
    values = score(cfgmod.load(path, [f"data.test_fns=[{tmp / 'held' / 'held.hdf5'}]"]), checkpoint, out)
    assert set(pd.read_csv(out)["split"]) == {"test"} and list(values["splits"]) == ["test"]


def test_first_native_rank_per_complex(trained):
    tmp, _, config, checkpoint = trained
    out = tmp / "ranks.csv"
    values = score(config, checkpoint, out)
    scores = pd.read_csv(out)
    for complex_id, group in scores.groupby("complex_id"):
        natives = group[group["label"] == 1]
        if len(natives):
            assert values["first_native_rank"][complex_id] == natives["pecan_rank"].min()
        else:
            assert complex_id not in values["first_native_rank"]
