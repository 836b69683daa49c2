"""A cross-rank flag raised by one rank only is acted on by every rank of a real 2-rank gloo job: a
non-finite loss on rank 1 stops both, and rank 0 names rank 1 and its batch; a stop signal to rank 1 alone
stops both after the same step; rank 0's checkpoint-due clock makes both write the mid-epoch checkpoint."""

from pathlib import Path

import pytest

from pecan import report
from pecan.train import checkpoint as ckpt
from tests.ddp import run_ranks
from tests.procs import app_argv, clean_env
from tests.train.helpers import tiny_run

pytestmark = [pytest.mark.multiprocess, pytest.mark.slow]
SHORT = ["train.epochs=1", "train.max_steps_per_epoch=3", "train.collective_timeout_s=60"]

RANK_ONE_HOOK = """
import os, signal
if os.environ.get("RANK") == "1":
    import pecan.train.trainer as _trainer
    _forward, _calls = _trainer.Trainer.forward_loss, []
    def _forward_loss(self, batch):
        _calls.append(1)
        loss = _forward(self, batch)
        if len(_calls) == 2:
{action}
        return loss
    _trainer.Trainer.forward_loss = _forward_loss
"""


def on_rank_one(tmp_path: Path, action: str) -> dict[str, str]:
    """A clean environment whose rank 1 runs ``action`` (with ``loss`` in scope) in its second forward pass:
    a sitecustomize on PYTHONPATH wraps the trainer's loss in that rank's interpreter only."""
    site = tmp_path / "rank-one"
    site.mkdir()
    (site / "sitecustomize.py").write_text(RANK_ONE_HOOK.format(action=" " * 12 + action))
    env = clean_env()
    env["PYTHONPATH"] = f"{site}:{env['PYTHONPATH']}"
    return env


def test_a_nonfinite_loss_on_rank_1_only_stops_both_naming_rank_1_and_its_batch(tmp_path):
    path, _ = tiny_run(tmp_path)
    env = on_rank_one(tmp_path, 'loss = loss * float("nan")')
    codes, out = run_ranks(app_argv(path, *SHORT), env=env, check=False, timeout=180)
    assert codes == [1, 1], out[-4000:]
    rank0 = (tmp_path / "run" / "logs" / "rank0.log").read_text()
    assert "non-finite training loss (nan) at epoch 1, step 2 (global step 2) on rank 1, batch of rank 1: " in rank0
    named = rank0.split("batch of rank 1: ")[1].split("; lower")[0]
    assert len(named.split("; ")) == 4 and all(", pose c" in part for part in named.split("; "))
    assert "batch of rank 0" not in rank0 and "Traceback" not in out


def test_a_stop_signal_to_rank_1_only_stops_both_after_the_same_step(tmp_path):
    path, _ = tiny_run(tmp_path)
    env = on_rank_one(tmp_path, "os.kill(os.getpid(), signal.SIGUSR1)")
    codes, out = run_ranks(app_argv(path, *SHORT), env=env, check=False, timeout=180)
    assert codes == [0, 0], out[-4000:]
    assert "stopped at epoch 1 step 2; rerun the same command to resume" in out, out[-4000:]
    markers = [r for r in report.read_records(tmp_path / "run" / "epochs.jsonl", events=True) if r.get("event")]
    assert [(m["step"], m["signal"]) for m in markers] == [(2, "")]  # rank 0 got no signal: it names none
    assert ckpt.load_checkpoint(tmp_path / "run" / "checkpoints" / "mid_epoch.pt")["position"]["done"] == 2


def test_a_checkpoint_due_on_rank_0s_clock_is_written_by_both_at_the_same_step(tmp_path):
    path, _ = tiny_run(tmp_path)
    codes, out = run_ranks(app_argv(path, *SHORT, "train.checkpoint_every_minutes=0.000001"), timeout=180)
    assert codes == [0, 0]
    state = ckpt.load_checkpoint(tmp_path / "run" / "checkpoints" / "mid_epoch.pt")
    assert state["position"]["done"] == 2 and state["world_size"] == 2  # each step but the epoch's last
    assert [r["epoch"] for r in report.read_records(tmp_path / "run" / "epochs.jsonl")] == [1]
