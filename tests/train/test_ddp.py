"""Multi-process DDP on CPU with gloo: 2 ranks (the harness, and once under a real torchrun agent), a 2-node
loopback rendezvous, 1 vs 2 ranks, kill + resume."""

import signal
import subprocess

import pytest

from pecan import report
from tests.ddp import free_port, run_ranks_ok
from tests.procs import ROOT, act_at, app_argv, clean_env, run_ok, sets, torchrun
from tests.shards import poison_poses
from tests.train.helpers import tiny_run

pytestmark = [pytest.mark.multiprocess, pytest.mark.slow]


def test_two_ranks_standalone(tmp_path):
    path, _ = tiny_run(tmp_path)
    # The real agent once: torchrun --standalone merges both ranks' output into one pipe.
    progress = ("data.num_workers=1", "train.progress=auto", "train.progress_every_seconds=0")
    out = run_ok(torchrun("--standalone", "--nproc_per_node=2", "main_app.py", str(path), *sets(*progress)))
    assert out.count("joined via torchrun") == 2
    records = report.read_records(tmp_path / "run" / "epochs.jsonl")
    assert [r["epoch"] for r in records] == [1, 2]  # written once, by rank 0
    assert all(r["world_size"] == 2 and r["ranks_in_sync"] for r in records)
    assert len(report.read_records(tmp_path / "run" / "runs.jsonl")) == 1
    logs = {rank: (tmp_path / "run" / "logs" / f"rank{rank}.log").read_text() for rank in (0, 1)}
    assert "[pecan r1] INFO pecan: rank 1, pid" in logs[1] and "[pecan r0]" not in logs[1]
    assert "data: " in logs[0] and "data: " not in logs[1]  # rank 0's INFO lines stay rank 0's
    assert "\r" not in out and "ETA run" in out  # a pipe is no terminal: progress lines, no bar frames


def test_two_nodes_on_loopback(tmp_path):
    path, _ = tiny_run(tmp_path)
    port = str(free_port())
    common = [
        "--nnodes=2",
        "--nproc_per_node=1",
        "--rdzv_backend=c10d",
        f"--rdzv_endpoint=127.0.0.1:{port}",
        "--rdzv_id=pecan-test",
        "main_app.py",
        str(path),
        "--set",
        "train.epochs=1",
    ]
    agents = [
        subprocess.Popen(
            torchrun(f"--node_rank={rank}", *common),
            cwd=ROOT,
            env=clean_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for rank in (0, 1)
    ]
    try:
        outputs = [agent.communicate(timeout=300)[0] for agent in agents]
    finally:
        for agent in agents:
            agent.kill()
    assert all(agent.returncode == 0 for agent in agents), "\n".join(o[-2000:] for o in outputs)
    records = report.read_records(tmp_path / "run" / "epochs.jsonl")
    assert len(records) == 1 and records[0]["world_size"] == 2 and records[0]["ranks_in_sync"]


@pytest.mark.ddp_smoke
def test_one_and_two_ranks_agree(tmp_path):
    settings = ["train.epochs=2", "train.deterministic=true", "train.max_steps_per_epoch=4", "model.dropout=0.0"]
    one, _ = tiny_run(tmp_path, *settings)
    run_ok(app_argv(one, "data.batch_size=8", f"train.out_dir={tmp_path / 'one'}", *settings))
    run_ranks_ok(app_argv(one, "data.batch_size=4", f"train.out_dir={tmp_path / 'two'}", *settings))
    single = report.read_records(tmp_path / "one" / "epochs.jsonl")
    double = report.read_records(tmp_path / "two" / "epochs.jsonl")
    for a, b in zip(single, double):
        assert a["samples"] == b["samples"]
        for key in ("train_loss", "val_loss", "val_auc", "val_acc", "weights_checksum"):
            assert a[key] == pytest.approx(b[key], rel=1e-4, abs=1e-5), key


def test_kill_and_resume_matches_uninterrupted(tmp_path):
    settings = ["train.epochs=3", "train.deterministic=true"]
    path, _ = tiny_run(tmp_path)
    run_ok(app_argv(path, *settings, f"train.out_dir={tmp_path / 'full'}"))
    out_dir = tmp_path / "killed"
    command = app_argv(path, *settings, f"train.out_dir={out_dir}")
    code, _ = act_at(command, "epoch   1 |", lambda process: process.send_signal(signal.SIGKILL), timeout=60)
    assert code == -signal.SIGKILL
    assert len(report.read_records(out_dir / "epochs.jsonl")) == 1
    run_ok(command)  # train.resume defaults to auto
    full = report.read_records(tmp_path / "full" / "epochs.jsonl")
    resumed = report.read_records(out_dir / "epochs.jsonl")
    assert [r["epoch"] for r in resumed] == [1, 2, 3]
    for key in ("train_loss", "val_auc", "weights_checksum"):
        assert resumed[-1][key] == pytest.approx(full[-1][key], rel=1e-5), key
    runs = report.read_records(out_dir / "runs.jsonl")
    assert runs[-1]["resumed_from"] and runs[-1]["start_epoch"] == 1


def test_all_bad_batch_keeps_ranks_in_step(tmp_path):
    path, _ = tiny_run(tmp_path)
    poison_poses(tmp_path / "data", lambda poses, names: names[::2])  # every other pose of every complex
    out = run_ranks_ok(
        app_argv(path, "data.io_mode=hoist", "data.on_bad_sample=skip", "data.batch_size=1", "train.seed=1")
    )
    assert "replaying the previous batch with zero weight" in out
    records = report.read_records(tmp_path / "run" / "epochs.jsonl")
    assert len(records) == 2 and all(r["ranks_in_sync"] for r in records)
    assert records[0]["io_counts"]["skipped"] > 0
