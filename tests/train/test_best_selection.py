"""best.pt always exists after a completed epoch: chosen by train.select_on, falling back to val_loss while
the validation AUC is undefined (one-class validation)."""

import json
import logging
import math

import pytest
import torch

from pecan import report
from pecan.engine.distributed import discover
from pecan.train import checkpoint as ckpt
from pecan.train.metrics import BestSelector
from pecan.train.trainer import Trainer
from tests.shards import write_shard
from tests.train.helpers import tiny_run

NAN = math.nan


def test_auc_chooses_while_defined():
    selector = BestSelector("val_auc")
    assert [
        selector.update({"val_auc": auc, "val_loss": loss})
        for auc, loss in [(0.6, 0.9), (0.7, 1.2), (0.65, 0.1), (0.7, 0.1)]
    ] == [True, True, False, False]
    assert selector.best == {"val_auc": 0.7, "val_loss": 1.2}


def test_undefined_auc_falls_back_to_loss(caplog):
    selector = BestSelector("val_auc")
    with caplog.at_level(logging.INFO):
        got = [selector.update({"val_auc": NAN, "val_loss": loss}) for loss in (0.8, 0.9, 0.5)]
    assert got == [True, False, True] and selector.best["val_loss"] == 0.5
    assert caplog.text.count("choosing by val_loss") == 1
    # The best so far has no AUC: an epoch with one is compared on the loss, which both have.
    assert selector.update({"val_auc": 0.9, "val_loss": 0.6}) is False
    assert selector.update({"val_auc": 0.9, "val_loss": 0.4}) is True


def test_select_on_loss_and_state_round_trip():
    selector = BestSelector("val_loss")
    assert [
        selector.update({"val_auc": auc, "val_loss": loss}) for auc, loss in [(0.9, 0.5), (0.99, 0.6), (0.5, 0.4)]
    ] == [True, False, True]
    restored = BestSelector("val_loss")
    restored.load(selector.state())
    assert restored.best == selector.best and restored.update({"val_auc": 1.0, "val_loss": 0.45}) is False
    legacy = BestSelector("val_auc")
    legacy.load(None, legacy_best_auc=0.8)
    assert legacy.update({"val_auc": 0.7, "val_loss": 0.1}) is False


@pytest.mark.slow
def test_best_pt_exists_with_one_class_validation(tmp_path, caplog):
    val_dir = tmp_path / "val"
    val_dir.mkdir()
    # Every validation pose is a decoy and there is no crystal: the AUC is undefined every epoch.
    write_shard(
        val_dir / "decoys.hdf5", n_complexes=2, n_poses=3, seed=7, prefix="v", crystal=False, rmsds=[3.0, 4.0, 5.0]
    )
    _, config = tiny_run(tmp_path, "train.epochs=2", "data.val_csvs=[]", f"data.val_fns=[{val_dir / 'decoys.hdf5'}]")
    trainer = Trainer.from_config(config, discover({}), torch.device("cpu"))
    try:
        with caplog.at_level(logging.INFO):
            trainer.fit()
    finally:
        trainer.close()
    records = report.read_records(tmp_path / "run" / "epochs.jsonl")
    assert len(records) == 2 and all(r["val_auc"] is None or math.isnan(r["val_auc"]) for r in records)
    best = ckpt.load_checkpoint(tmp_path / "run" / "checkpoints" / "best.pt")
    assert best["best"]["criterion"] == "val_loss" and "choosing by val_loss" in caplog.text
    losses = [r["val_loss"] for r in records]
    assert best["epoch"] == 1 + losses.index(min(losses))
    assert json.loads(best["records"])[-1]["val_loss"] == pytest.approx(min(losses))
