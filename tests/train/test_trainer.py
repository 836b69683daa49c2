"""Single-process trainer: learning, reports, checkpoints, resume, AMP, compile."""

import math

import pytest
import torch

from pecan import report
from pecan.train import checkpoint as ckpt
from pecan.train.components import amp_context, cosine_schedule
from pecan.train.distributed import discover
from pecan.train.trainer import Trainer
from tests.train.helpers import tiny_run


def run(config):
    trainer = Trainer(config, discover({}), torch.device("cpu")).setup()
    try:
        return trainer, trainer.fit()
    finally:
        trainer.close()


def test_two_epochs_learn_and_report(tmp_path):
    _, config = tiny_run(tmp_path, "train.epochs=4")
    trainer, records = run(config)
    assert records[-1]["train_loss"] < records[0]["train_loss"]
    written = report.read_records(tmp_path / "run" / "epochs.jsonl")
    assert [r["epoch"] for r in written] == [1, 2, 3, 4]
    for record in written:
        missing = [f for f in report.REQUIRED_FIELDS if f not in record]
        assert not missing
        assert record["world_size"] == 1 and record["ranks_in_sync"]
        assert record["samples"] == len(trainer.train_set)
        assert 0.0 <= record["data_wait_share"] <= 1.0
    assert written[1]["h5_calls_per_sample"] == 0 and written[1]["file_opens_per_sample"] == 0
    assert (tmp_path / "run" / "config.yaml").exists()
    run_info = report.read_records(tmp_path / "run" / "runs.jsonl")[0]
    assert run_info["config_digest"] == config.digest() and "torch" in run_info["packages"]
    assert (tmp_path / "run" / "checkpoints" / "best.pt").exists()


@pytest.mark.parametrize("mode", ["reopen", "hoist"])
def test_h5_levels_report_their_io(tmp_path, mode):
    _, config = tiny_run(tmp_path, f"data.io_mode={mode}", "train.epochs=1")
    _, records = run(config)
    assert records[0]["h5_calls_per_sample"] > 0
    if mode == "reopen":
        assert records[0]["file_opens_per_sample"] >= 1


def test_checkpoint_is_safe_and_resumes(tmp_path):
    _, config = tiny_run(tmp_path, "train.epochs=2", "train.deterministic=true")
    _, full = run(config)
    state = ckpt.load_checkpoint(tmp_path / "run" / "checkpoints" / "last.pt")
    assert state["epoch"] == 2 and not any(k.startswith(("module.", "_orig_mod.")) for k in state["model"])

    # Same run, stopped after epoch 1 and resumed in a new trainer.
    _, config2 = tiny_run(tmp_path, "train.epochs=2", "train.deterministic=true", f"train.out_dir={tmp_path / 'r2'}")
    first = Trainer(config2, discover({}), torch.device("cpu")).setup()
    first.run_epoch(0)
    first.close()
    second, resumed = run(config2)
    assert second.start_epoch == 1 and len(resumed) == 1
    assert resumed[0]["train_loss"] == pytest.approx(full[1]["train_loss"], rel=1e-5)
    assert resumed[0]["val_auc"] == pytest.approx(full[1]["val_auc"], rel=1e-5)
    assert resumed[0]["weights_checksum"] == pytest.approx(full[1]["weights_checksum"], rel=1e-6)


def test_resume_explicit_missing_path_errors(tmp_path):
    _, config = tiny_run(tmp_path, f"train.resume={tmp_path / 'nope.pt'}")
    with pytest.raises(FileNotFoundError, match="nope.pt"):
        Trainer(config, discover({}), torch.device("cpu")).setup()


def test_bf16_autocast_trains(tmp_path):
    _, config = tiny_run(tmp_path, "train.amp=bf16", "train.epochs=1")
    _, records = run(config)
    assert math.isfinite(records[0]["train_loss"]) and math.isfinite(records[0]["val_loss"])


def test_amp_context_choices():
    with amp_context(torch.device("cpu"), "bf16"):
        assert (torch.ones(2, 2) @ torch.ones(2, 2)).dtype == torch.bfloat16
    with amp_context(torch.device("cpu"), "off"):
        assert (torch.ones(2, 2) @ torch.ones(2, 2)).dtype == torch.float32


def test_cosine_schedule_shape():
    factor = cosine_schedule(100, 10)
    assert factor(0) == pytest.approx(0.1) and factor(9) == pytest.approx(1.0)
    assert factor(10) == pytest.approx(1.0) and factor(100) == pytest.approx(0.05)
    assert factor(55) < factor(20)


@pytest.mark.slow
def test_compile_trains_and_checkpoint_loads_uncompiled(tmp_path):
    _, config = tiny_run(tmp_path, "train.compile=true", "train.epochs=1")
    trainer, records = run(config)
    assert math.isfinite(records[0]["train_loss"])
    state = ckpt.load_checkpoint(tmp_path / "run" / "checkpoints" / "last.pt")
    assert not any("_orig_mod" in k for k in state["model"])
    from model import build_model

    fresh = build_model("egnn", config.model)
    fresh.load_state_dict(state["model"])  # strict: every key matches an uncompiled model
