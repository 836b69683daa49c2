"""Scoring with a trained checkpoint (pecan predict), and the loss's positive-class weight."""

import json
import sys

import numpy as np
import pandas as pd
import pytest
import torch
import torch.nn.functional as F

from pecan import config as cfgmod
from pecan.config import ConfigError
from pecan.data.index import DataError, build_index
from pecan.engine.distributed import discover
from pecan.scoring.checkpoint import load_model
from pecan.scoring.shards import SCORE_COLUMNS, metrics_path, run_predict
from pecan.train import checkpoint as ckpt
from pecan.train.metrics import resolve_pos_weight, roc_auc, top1_success
from pecan.train.trainer import Trainer
from tests.ddp import run_ranks_ok
from tests.procs import run_checked, run_ok
from tests.train.helpers import tiny_run


@pytest.fixture(scope="module")
def trained(trained_run, tmp_path_factory):
    """The session's one-epoch tiny run copied here; returns (tmp dir, config path, config, checkpoint)."""
    tmp = tmp_path_factory.mktemp("predict")
    path, config = trained_run.copy_to(tmp, "train.epochs=1")
    return tmp, path, config, trained_run.checkpoint


def predict_cli(config_path, checkpoint, out) -> list[str]:
    """The argv of ``python -m pecan predict CHECKPOINT --config CONFIG --out OUT``."""
    return [
        sys.executable,
        "-u",
        "-m",
        "pecan",
        "predict",
        str(checkpoint),
        "--config",
        str(config_path),
        "--out",
        str(out),
    ]


def check_scores(scores: pd.DataFrame, values: dict, config) -> None:
    """Columns, ranks and that the metrics JSON is what the CSV says."""
    assert list(scores.columns) == list(SCORE_COLUMNS)
    for _, group in scores.groupby("complex_id"):
        assert sorted(group["pecan_rank"]) == list(range(1, len(group) + 1))
        assert group.sort_values("pecan_rank")["pecan_score"].is_monotonic_decreasing
    assert ((scores["pecan_score"] > 0) & (scores["pecan_score"] < 1)).all()
    assert list(scores["label"]) == list((scores["rmsd"] < config.data.rmsd_threshold).astype(int))
    labels = scores["label"].to_numpy()
    assert values["poses"] == len(scores) and values["labeled"]
    assert values["auc"] == pytest.approx(roc_auc(scores["pecan_score"].to_numpy(), labels))
    assert values["top1"] == pytest.approx(
        top1_success(scores["pecan_score"].to_numpy(), labels, scores["complex_id"].to_numpy())
    )
    assert values["docking_auc"] == pytest.approx(roc_auc(-scores["docking_score"].to_numpy(), labels))
    assert values["accuracy"] == pytest.approx(((scores["pecan_score"] > 0.5) == (labels == 1)).mean())


@pytest.mark.slow
def test_predict_end_to_end(trained):
    tmp, config_path, config, checkpoint = trained
    out = tmp / "scores.csv"
    done = run_checked(predict_cli(config_path, checkpoint, out))
    scores = pd.read_csv(out)
    values = json.loads(metrics_path(out).read_text())
    # every docked pose of the training and validation data, and no crystal pose
    assert len(scores) == 2 * 4 * 6 and not scores["pose_id"].isin(["pdbbind"]).any()
    check_scores(scores, values, config)
    assert f"model AUC {values['auc']:.3f}" in done.stdout and "docking score AUC" in done.stdout


def test_predict_test_source_only(trained):
    from tests.shards import write_shard

    tmp, config_path, config, checkpoint = trained
    (tmp / "test").mkdir(exist_ok=True)
    write_shard(tmp / "test" / "held_out.hdf5", n_complexes=3, n_poses=4, seed=9, prefix="t")
    out = tmp / "test_scores.csv"
    test_config = cfgmod.load(config_path, [f"data.test_fns=[{tmp / 'test' / 'held_out.hdf5'}]"])
    run_predict(test_config, discover({}), torch.device("cpu"), str(checkpoint), str(out))
    scores = pd.read_csv(out)
    assert len(scores) == 12 and scores["complex_id"].str.startswith("t9").all()
    check_scores(scores, json.loads(metrics_path(out).read_text()), config)


@pytest.mark.parametrize("io_mode", ["packed", "reopen"])
def test_predict_scores_poses_without_a_known_answer(trained, io_mode):
    """Docking output without a crystal ligand has no rmsd and no label: scoring ranks it all the same, and
    reports no metrics instead of refusing it; training on such data is still refused."""
    import h5py

    from tests.shards import write_shard

    tmp, config_path, config, checkpoint = trained
    shard = tmp / f"unknown_{io_mode}" / "docked.hdf5"
    shard.parent.mkdir(exist_ok=True)
    write_shard(shard, n_complexes=2, n_poses=3, seed=5, prefix="u", crystal=False)
    with h5py.File(shard, "r+") as handle:
        for complex_group in handle.values():
            for pose in complex_group[config.data.pose_group].values():
                del pose.attrs["rmsd"], pose.attrs["label"]
    out = tmp / f"unknown_{io_mode}.csv"
    settings = [f"data.test_fns=[{shard}]", f"data.io_mode={io_mode}"]
    values = run_predict(
        cfgmod.load(config_path, settings), discover({}), torch.device("cpu"), str(checkpoint), str(out)
    )
    scores = pd.read_csv(out)
    assert len(scores) == 6 and scores["label"].isna().all() and scores["rmsd"].isna().all()
    assert ((scores["pecan_score"] > 0) & (scores["pecan_score"] < 1)).all()
    for _, group in scores.groupby("complex_id"):
        assert sorted(group["pecan_rank"]) == [1, 2, 3]
    assert values["labeled"] is False and "auc" not in values
    with pytest.raises(DataError, match="neither a label nor an rmsd"):
        build_index(
            [],
            [str(shard)],
            "",
            pose_group=config.data.pose_group,
            crystal_group=config.data.crystal_group,
            use_crystal=False,
            rmsd_threshold=2.0,
            index_prefix="x",
            write_csv=False,
        )


def test_checkpoint_of_another_model_config_is_refused(trained):
    tmp, config_path, config, checkpoint = trained
    state = ckpt.load_checkpoint(checkpoint)
    wider = dict(state, model_config={**state["model_config"], "hidden": 32})
    ckpt.save_checkpoint(tmp / "wider.pt", wider)
    with pytest.raises(ConfigError, match="different model config or feature layout"):
        load_model(tmp / "wider.pt", config, torch.device("cpu"))
    other_layout = dict(state, feature_layout={**state["feature_layout"], "n_features": 24})
    ckpt.save_checkpoint(tmp / "layout.pt", other_layout)
    with pytest.raises(ConfigError, match="feature layout"):
        run_predict(config, discover({}), torch.device("cpu"), str(tmp / "layout.pt"), str(tmp / "never.csv"))
    assert not (tmp / "never.csv").exists()


def test_stored_model_config_wins_over_the_yaml(trained, caplog):
    tmp, config_path, config, checkpoint = trained
    other = cfgmod.load(config_path, ["model.hidden=40"])
    model = load_model(checkpoint, other, torch.device("cpu"))
    assert "using the model config stored in" in caplog.text
    assert sum(p.numel() for p in model.parameters()) == sum(
        v.numel() for v in ckpt.load_checkpoint(checkpoint)["model"].values()
    )


def test_pos_weight_auto_and_in_the_loss(tmp_path):
    _, config = tiny_run(tmp_path, "train.pos_weight=auto", "train.epochs=1")
    frame = build_index(
        config.data.train_csvs,
        [],
        config.data.data_dir,
        pose_group=config.data.pose_group,
        crystal_group=config.data.crystal_group,
        use_crystal=True,
        rmsd_threshold=2.0,
        index_prefix="x",
        write_csv=False,
    )
    positives = int(frame["label"].sum())
    labels = frame["label"].to_numpy()
    assert resolve_pos_weight("auto", labels) == pytest.approx((len(frame) - positives) / positives)
    assert resolve_pos_weight(2.5, labels) == 2.5
    with pytest.raises(ValueError, match="pos_weight"):
        resolve_pos_weight("auto", labels * 0)
    trainer = Trainer.from_config(config, discover({}), torch.device("cpu"))
    try:
        expected = resolve_pos_weight("auto", trainer.data.train_index["label"].to_numpy())
        assert trainer.data.pos_weight == pytest.approx(expected) and expected != 1.0
        batch, _ = next(iter(trainer.data.train_loader))
        with torch.no_grad():
            logits = trainer.model(batch)
            manual = F.binary_cross_entropy_with_logits(logits, batch.y, pos_weight=torch.tensor(expected))
            assert trainer.forward_loss(batch).item() == pytest.approx(manual.item(), rel=1e-6)
        record = trainer.fit()[0]
        assert record["pos_weight"] == pytest.approx(expected)
    finally:
        trainer.close()


@pytest.mark.multiprocess
@pytest.mark.slow
def test_two_rank_predict_equals_one_rank(trained):
    tmp, config_path, config, checkpoint = trained
    single = tmp / "one.csv"
    run_ok(predict_cli(config_path, checkpoint, single))
    double = tmp / "two.csv"
    run_ranks_ok(predict_cli(config_path, checkpoint, double))
    one, two = pd.read_csv(single), pd.read_csv(double)
    assert len(two) == len(one) and list(two["pose_id"]) == list(one["pose_id"])
    np.testing.assert_allclose(two["pecan_score"], one["pecan_score"], rtol=1e-5)
    assert json.loads(metrics_path(double).read_text())["auc"] == pytest.approx(
        json.loads(metrics_path(single).read_text())["auc"]
    )


@pytest.mark.slow
def test_training_and_scoring_never_import_the_converter():
    code = (
        "import sys, main_app, pecan.train.trainer, pecan.scoring.shards, pecan.data.loader; "
        "bad = [m for m in sys.modules if m.split('.')[0] in ('rdkit', 'prolif', 'MDAnalysis') "
        "or m.startswith('pecan.convert')]; print(bad); sys.exit(1 if bad else 0)"
    )
    run_ok([sys.executable, "-c", code], timeout=120)
