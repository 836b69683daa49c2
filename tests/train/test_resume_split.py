"""A mid-epoch checkpoint resumed under another split: a 2-rank run's checkpoint resumed by one process trains
each sample of the epoch once (the samples no rank saw, split anew); another batch size under
train.max_steps_per_epoch restarts the epoch. Each says which in the log."""

import logging
import shutil

import pytest

from pecan import report
from pecan.train import checkpoint as ckpt
from tests.ddp import run_ranks_ok
from tests.procs import app_argv, run_ok
from tests.train.helpers import tiny_run
from tests.train.test_lifecycle import fit_closed, make_trainer

ONE_EPOCH = ["train.epochs=1", "train.checkpoint_every_steps=5"]


def only_mid_epoch(from_dir, to_dir) -> None:
    """``to_dir`` as a run killed after ``from_dir``'s mid-epoch checkpoint left it: that checkpoint alone."""
    (to_dir / "checkpoints").mkdir(parents=True)
    shutil.copy(from_dir / "checkpoints" / "mid_epoch.pt", to_dir / "checkpoints" / "mid_epoch.pt")


@pytest.mark.slow
@pytest.mark.multiprocess
def test_a_two_rank_checkpoint_resumed_by_one_process_trains_each_sample_once(tmp_path):
    path, _ = tiny_run(tmp_path)
    two, one = tmp_path / "two", tmp_path / "one"
    run_ranks_ok(app_argv(path, *ONE_EPOCH, f"train.out_dir={two}"), timeout=240)
    state = ckpt.load_checkpoint(two / "checkpoints" / "mid_epoch.pt")
    assert state["position"]["done"] == 5 and state["world_size"] == 2
    (full,) = report.read_records(two / "epochs.jsonl")
    only_mid_epoch(two, one)
    out = run_ok(app_argv(path, *ONE_EPOCH, f"train.out_dir={one}"), timeout=240)
    unseen = full["samples"] - 2 * 5 * 4  # 2 ranks x 5 steps x batch 4 seen before the checkpoint
    assert f"continuing epoch 1 with the {unseen} samples not yet seen (of {full['samples']})" in out
    # The global batch halves with the ranks: said once, and recorded with this start.
    assert "global batch of 8 (2 rank(s) x batch 4); this run's is 4 (1 rank(s) x batch 4)" in out
    assert out.count("global batch of 8") == 1
    resume = report.read_records(one / "runs.jsonl")[-1]["resume"]
    assert resume["global_batch"]["before"] == 8 and resume["global_batch"]["now"] == 4
    (resumed,) = report.read_records(one / "epochs.jsonl")
    assert resumed["samples"] == full["samples"] == state["position"]["samples"] + unseen
    assert resumed["samples_before_resume"] == 40


def test_another_batch_size_under_a_step_cap_restarts_the_epoch(tmp_path, caplog):
    path, _ = tiny_run(tmp_path)
    first, second = tmp_path / "first", tmp_path / "second"
    capped = ["train.epochs=1", "train.max_steps_per_epoch=4", "train.checkpoint_every_steps=2"]
    fit_closed(make_trainer(path, *capped, "data.batch_size=2", f"train.out_dir={first}"))
    only_mid_epoch(first, second)
    with caplog.at_level(logging.WARNING):
        fit_closed(make_trainer(path, *capped, "data.batch_size=3", f"train.out_dir={second}"))
    assert "restarting epoch 1 from its first step" in caplog.text
    assert "the 4 samples trained before the stop are trained again" in caplog.text
    (record,) = report.read_records(second / "epochs.jsonl")
    assert record["samples"] == 4 * 3 and record["samples_before_resume"] == 0
