"""What a run shows where it goes: progress lines in a log file (no carriage returns), the CPU share of a rank
pinned to fewer cores than threads, the compact report, TensorBoard per-step scalars, the per-rank log."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from pecan import report
from tests.train.helpers import tiny_run

ROOT = Path(__file__).resolve().parents[2]


def run_to_file(tmp_path: Path, config: Path, *settings: str, pin: bool = False, threads: int = 0) -> str:
    """Train with stdout and stderr going to a file (as under a batch system); returns the file's text.
    ``threads``: OMP_NUM_THREADS for the run (0: unset, the run sizes its threads to the cores)."""
    command = [sys.executable, "-m", "pecan", "train", str(config), *(f"--set={s}" for s in settings)]
    if pin:
        command = ["taskset", "-c", "0", *command]
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("OMP_", "MKL_", "PECAN_", "RANK", "WORLD_SIZE", "LOCAL_", "MASTER_"))
    }
    env["PYTHONPATH"] = str(ROOT)
    if threads:
        env["OMP_NUM_THREADS"] = str(threads)
    log = tmp_path / "job.log"
    with open(log, "w") as out:
        done = subprocess.run(command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, timeout=600)
    text = log.read_text()
    assert done.returncode == 0, text[-3000:]
    return text


@pytest.mark.skipif(shutil.which("taskset") is None, reason="needs taskset to pin the run to one core")
@pytest.mark.slow
def test_log_file_run_has_lines_not_frames_and_flags_a_starved_rank(tmp_path):
    path, _ = tiny_run(tmp_path)
    text = run_to_file(
        tmp_path,
        path,
        "train.progress=auto",
        "train.progress_every_seconds=0",
        "train.intra_op_threads=2",
        "train.tensorboard=true",
        "train.tensorboard_every_steps=2",
        "train.report=compact",
        pin=True,
    )
    assert "\r" not in text
    lines = [line for line in text.splitlines() if "INFO epoch 1/2: " in line]
    assert lines and all(
        " ETA " in line and "ETA run" in line and "samples/s" in line and "loss " in line for line in lines
    )
    records = report.read_records(tmp_path / "run" / "epochs.jsonl")
    # Two threads on one core: the process cannot get more than about half of what its threads ask for.
    assert all(0 < r["cpu_share"] <= 0.6 and r["ranks"]["cpu_share"] == [r["cpu_share"]] for r in records)
    assert "got" in text and "OMP_NUM_THREADS=1 or train.intra_op_threads=1" in text
    compact = [line for line in text.splitlines() if line.startswith("epoch   2/2 |")]
    assert compact and "compute " in compact[0] and "ETA 0:00:00" in compact[0] and "CPU share" in compact[0]
    assert "straggler" not in text  # one rank: no rank statistics
    assert (tmp_path / "run" / "logs" / "rank0.log").read_text().count("INFO pecan.progress: epoch 1/2: ") == len(lines)
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    events = EventAccumulator(str(tmp_path / "run" / "tensorboard")).Reload()
    steps = [e.step for e in events.Scalars("step/train_loss")]
    assert steps and steps == list(range(2, 2 * len(steps) + 1, 2))
    assert len(events.Scalars("step/lr")) == len(steps) and len(events.Scalars("epoch/val_auc")) == 2
    assert "_hparams_/experiment" in events.summary_metadata  # the hparams with the final metrics


@pytest.mark.slow
def test_full_report_of_one_rank_has_no_rank_statistics(tmp_path):
    path, _ = tiny_run(tmp_path)
    text = run_to_file(tmp_path, path, "train.progress=lines", "train.epochs=1", "train.intra_op_threads=1")
    assert "\r" not in text and "phase            seconds    share\n" in text
    assert "straggler" not in text and "mean      max" not in text
    assert "1 intra-op threads (CPU share" in text


@pytest.mark.slow
def test_resume_with_changed_settings_names_the_keys_and_both_values(tmp_path, trained_run):
    path, _ = trained_run.copy_to(tmp_path)  # one epoch of the tiny run: batches of 4, lr 0.003
    # One thread per run, as tests/procs.py gives every run: two threads per run on two busy cores only wait.
    changed = ("train.epochs=2", "train.lr=0.001", "data.batch_size=8", "train.progress=off")
    text = run_to_file(tmp_path, path, *changed, threads=1)
    warning = next(line for line in text.splitlines() if "with changed settings" in line)
    assert (
        "data.batch_size: checkpoint 4, config 8" in warning and "train.lr: checkpoint 0.003, config 0.001" in warning
    )
    assert "train.epochs: checkpoint 1, config 2" in warning and "digest" not in warning
