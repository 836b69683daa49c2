"""Two ranks: a stop signal to both ranks of a real torchrun job (as Slurm sends it) stops them after the same
step and the rerun ends with an uninterrupted run's weights; evaluation with an empty validation share does not
hang; a killed peer is named by the survivor within the collective timeout (these two on the 2-process harness)."""

import os
import signal
import time
from pathlib import Path

import pandas as pd
import pytest

from pecan import report
from tests.ddp import kill_all, run_ranks_ok, start_ranks
from tests.procs import act_at, app_argv, sets, torchrun
from tests.shards import poison_poses
from tests.train.helpers import tiny_run
from tests.train.test_lifecycle import assert_same_weights, weights

pytestmark = [pytest.mark.multiprocess, pytest.mark.slow]
HANG_LIMIT_S = 240  # the old hang lasted the hard-coded 1800 s collective timeout


def two_ranks(path, out_dir, *settings) -> list[str]:
    """The argv each of two ranks runs (tests.ddp starts them)."""
    return app_argv(path, *settings, f"train.out_dir={out_dir}")


def under_torchrun(path, out_dir, *settings) -> list[str]:
    """The same job under a real torchrun agent, for the signals the agent's ranks receive."""
    job = ["--standalone", "--nproc_per_node=2", "main_app.py", str(path)]
    return torchrun(*job, *sets(*settings, f"train.out_dir={out_dir}"))


def children(pid: int) -> list[int]:
    """Direct child processes of ``pid`` (torchrun's ranks)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
    return found


def test_stop_signal_to_both_ranks_stops_together_and_resumes_exactly(tmp_path):
    path, _ = tiny_run(tmp_path)
    settings = ["train.epochs=3", "train.deterministic=true", "data.batch_size=2"]
    run_ranks_ok(two_ranks(path, tmp_path / "full", *settings), timeout=400)
    out_dir = tmp_path / "stopped"
    cmd = under_torchrun(path, out_dir, *settings)

    def stop_both_ranks(agent) -> None:
        ranks = children(agent.pid)
        assert len(ranks) == 2, ranks
        for rank in ranks:  # what `#SBATCH --signal=USR1@120` does: every task gets it
            os.kill(rank, signal.SIGUSR1)

    code, out = act_at(cmd, "epoch   1 |", stop_both_ranks)
    assert code == 0, out[-3000:]
    assert "rerun the same command to resume" in out and "Traceback" not in out
    assert not (out_dir / ".pecan.lock").exists()
    markers = [r for r in report.read_records(out_dir / "epochs.jsonl", events=True) if r.get("event")]
    assert len(markers) == 1 and markers[0]["signal"] == "SIGUSR1"
    # The signal follows epoch 1's line: it lands in epoch 2, or (under load) before epoch 2's first step.
    stop = markers[0]
    assert stop["epoch"] == 2 or (stop["epoch"] == 1 and stop["step"] == stop["steps_per_epoch"]), stop
    run_ranks_ok(two_ranks(path, out_dir, *settings), timeout=400)  # the rerun needs no agent
    assert_same_weights(weights(tmp_path / "full"), weights(out_dir))
    assert [r["epoch"] for r in report.read_records(out_dir / "epochs.jsonl")] == [1, 2, 3]


def write_val_csv(data_dir: Path, rows: int) -> Path:
    index = pd.read_csv(data_dir / "index.csv")
    docked = index[index["is_crystal"] == 0].head(rows).copy()
    docked["shard"] = [str(data_dir / s) for s in docked["shard"]]
    path = data_dir / "val.csv"
    docked.to_csv(path, index=False)
    return path


def corrupt(data_dir: Path, poseid: str) -> None:
    assert poison_poses(data_dir, lambda poses, names: [poseid] if poseid in poses else []) == [poseid]


@pytest.mark.parametrize("case", ["one_validation_sample", "rank1_share_all_bad"])
def test_evaluation_with_an_empty_share_does_not_hang(tmp_path, case):
    path, _ = tiny_run(tmp_path)
    data_dir = tmp_path / "data"
    val = write_val_csv(data_dir, 1 if case == "one_validation_sample" else 2)
    settings = [
        f"data.val_csvs=[{val}]",
        "train.epochs=1",
        "train.max_steps_per_epoch=2",
        "train.collective_timeout_s=120",
    ]
    if case == "rank1_share_all_bad":
        # Validation is sharded in order: rank 1 gets the second row alone; it is read (and skipped) at batch time.
        corrupt(data_dir, pd.read_csv(val)["poseid"].iloc[1])
        settings += ["data.on_bad_sample=skip", "data.io_mode=hoist"]
    start = time.monotonic()
    run_ranks_ok(two_ranks(path, tmp_path / "run", *settings), timeout=HANG_LIMIT_S)
    assert time.monotonic() - start < HANG_LIMIT_S
    records = report.read_records(tmp_path / "run" / "epochs.jsonl")
    assert len(records) == 1 and records[0]["world_size"] == 2


def test_a_killed_peer_is_named_by_the_survivor_within_the_timeout(tmp_path):
    path, _ = tiny_run(tmp_path)
    timeout_s = 30  # the tiny run reaches its first epoch in seconds; the wait after the kill is what is tested
    settings = ("train.epochs=50", "data.batch_size=2", f"train.collective_timeout_s={timeout_s}")
    ranks = start_ranks(app_argv(path, *settings))
    survivor, victim = ranks
    lines = []
    try:
        for line in survivor.stdout:
            lines.append(line)
            if line.startswith("epoch   1 |"):
                victim.kill()
                killed_at = time.monotonic()
                break
        rest, _ = survivor.communicate(timeout=timeout_s + 60)
        waited = time.monotonic() - killed_at
    finally:
        kill_all(ranks)
    out = "".join(lines) + rest
    print(f"survivor exited {waited:.1f} s after the kill")
    assert survivor.returncode == 1, out[-3000:]
    assert waited < timeout_s + 20, waited
    assert "lost: rank 1 (host " in out and "rerun the same command to resume" in out, out[-3000:]
    assert "Traceback" not in out
