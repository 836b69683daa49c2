"""A non-finite loss stops the run naming the epoch, the step and the poses of its batch, or the step is
skipped and counted under train.on_nonfinite_loss=skip."""

from __future__ import annotations

import math

import pytest

from tests.app_run import records, run


def test_nonfinite_loss_names_the_poses_of_its_batch(tmp_path, data_dir, caplog, capsys, monkeypatch):
    from pecan.train.trainer import Trainer

    original, calls = Trainer.forward_loss, []

    def nan_at_step_2(self, batch):
        calls.append(1)
        return original(self, batch) * (math.nan if len(calls) == 2 else 1.0)

    monkeypatch.setattr(Trainer, "forward_loss", nan_at_step_2)
    code, text = run(tmp_path, data_dir, caplog=caplog, capsys=capsys)
    assert code == 1 and "epoch 1, step 2" in text and "batch of rank 0: shard " in text
    named = text.split("batch of rank 0: ")[1].split("; lower")[0]
    assert len(named.split("; ")) == 4 and all(", pose c" in part for part in named.split("; "))


@pytest.mark.parametrize("mode", ["error", "skip"])
def test_nonfinite_loss_stops_naming_step_or_is_skipped(tmp_path, data_dir, caplog, capsys, monkeypatch, mode):
    from pecan.train.trainer import Trainer

    original, calls = Trainer.forward_loss, []

    def sometimes_nan(self, batch):
        calls.append(1)
        loss = original(self, batch)
        return loss * math.nan if len(calls) == 2 else loss

    monkeypatch.setattr(Trainer, "forward_loss", sometimes_nan)
    code, text = run(tmp_path, data_dir, f"train.on_nonfinite_loss={mode}", caplog=caplog, capsys=capsys)
    if mode == "error":
        assert code == 1 and "non-finite training loss (nan) at epoch 1, step 2" in text
    else:
        assert code == 0, text
        assert records(tmp_path)[0]["nonfinite_steps"] == 1 and math.isfinite(records(tmp_path)[0]["train_loss"])
