"""Job lifecycle with real signals to real runs: stop at a step boundary with a mid-epoch checkpoint, the
final sync, no lock left, exact resume, the resumed epoch's rate; mid-epoch checkpoint cadence; damaged
checkpoints and records; unusable out_dirs; the finished-run message."""

import os
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

import main_app
from pecan import report
from pecan.engine.distributed import discover
from pecan.runtime.errors import DataError
from pecan.train import checkpoint as ckpt
from pecan.train.lifecycle import RunStopped, StopSignals
from pecan.train.trainer import Trainer
from tests.procs import ROOT, act_at, app_argv, clean_env, run_ok
from tests.train.helpers import tiny_run

EXACT = ["train.epochs=2", "train.deterministic=true", "data.batch_size=2", "model.dropout=0.2", "data.augment=true"]


def command(path, out_dir, *settings) -> list[str]:
    return app_argv(path, *settings, f"train.out_dir={out_dir}")


def signal_at(cmd: list[str], marker: str, sig: int, timeout: int = 300) -> tuple[int, str]:
    """Start ``cmd``, send ``sig`` when a line holds ``marker``, return (exit code, all output)."""
    return act_at(cmd, marker, lambda process: process.send_signal(sig), timeout)


def weights(out_dir: Path) -> dict:
    return ckpt.load_checkpoint(out_dir / "checkpoints" / "last.pt")["model"]


def assert_same_weights(a: dict, b: dict) -> None:
    assert a.keys() == b.keys()
    assert [name for name in a if not torch.equal(a[name], b[name])] == []


@pytest.fixture(scope="module")
def uninterrupted(tmp_path_factory) -> tuple[Path, Path]:
    """(config, out_dir) of the tiny run trained to the end without a stop: what each stopped run must equal."""
    tmp = tmp_path_factory.mktemp("uninterrupted")
    path, _ = tiny_run(tmp)
    run_ok(command(path, tmp / "full", *EXACT), env=clean_env(XDG_CACHE_HOME=str(tmp / "xdg-cache")))
    return path, tmp / "full"


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGUSR1])
def test_signal_stops_at_the_next_step_and_rerun_resumes_exactly(tmp_path, uninterrupted, sig):
    path, full_dir = uninterrupted  # the same shards; this run's packs and outputs in tmp_path
    out_dir, sync_dir = tmp_path / "stopped", tmp_path / "shared"
    settings = (*EXACT, f"train.sync_dir={sync_dir}", "train.sync_every_minutes=600")
    cmd = command(path, out_dir, *settings, f"data.cache_dir={tmp_path / 'cache'}")
    # "threads:" is logged inside setup, after the handlers are installed: the stop comes after step 1.
    code, out = signal_at(cmd, "threads:", sig)
    assert code == 0, out[-3000:]
    assert "stopped at epoch 1 step 1; rerun the same command to resume" in out
    assert "Traceback" not in out
    assert not (out_dir / ".pecan.lock").exists()
    state = ckpt.load_checkpoint(out_dir / "checkpoints" / "mid_epoch.pt")
    assert state["epoch"] == 0 and state["position"]["done"] == 1 and state["step"] == 1
    markers = [r for r in report.read_records(out_dir / "epochs.jsonl", events=True) if r.get("event")]
    assert markers[0]["signal"] == signal.Signals(sig).name and markers[0]["step"] == 1
    assert "stopped at step 1 of epoch 1" in markers[0]["message"]
    # The final sync ran although its interval is 10 h, and it did not copy the lock.
    assert (sync_dir / "checkpoints" / "mid_epoch.pt").exists() and (sync_dir / "epochs.jsonl").exists()
    assert not (sync_dir / ".pecan.lock").exists()

    run_ok(cmd)
    assert_same_weights(weights(full_dir), weights(out_dir))
    full = report.read_records(full_dir / "epochs.jsonl")
    resumed = report.read_records(out_dir / "epochs.jsonl")
    assert [r["epoch"] for r in resumed] == [1, 2]
    # The interrupted epoch's record covers the whole epoch (the step before the stop included).
    assert resumed[0]["samples"] == full[0]["samples"]
    assert resumed[0]["train_loss"] == pytest.approx(full[0]["train_loss"], rel=1e-12)
    assert report.read_records(out_dir / "runs.jsonl")[-1]["resumed_from"].endswith("mid_epoch.pt")
    # Its rate counts only the samples of the resumed part (step 1, one batch, ran before the stop).
    assert resumed[0]["samples_before_resume"] == 2 < resumed[0]["samples"]  # data.batch_size in EXACT
    assert resumed[0]["samples_per_s"] == pytest.approx((resumed[0]["samples"] - 2) / resumed[0]["wall_s"])


SECOND_SIGNAL = textwrap.dedent("""
    import os, signal, sys, time
    from pecan.train import lifecycle
    lifecycle.GRACE_S = float(sys.argv[1])
    signals = lifecycle.StopSignals("SIGUSR1").install()
    signals.on_abort.append(lambda: print("abort callback ran", flush=True))
    os.kill(os.getpid(), signal.SIGUSR1)
    os.kill(os.getpid(), signal.SIGTERM)  # within the grace: the same request
    print("still running, requested", signals.requested, signals.name, flush=True)
    time.sleep(float(sys.argv[1]) + 0.2)
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(5)
    print("not reached", flush=True)
""")


@pytest.mark.slow
def test_a_second_signal_during_the_stop_exits_at_once():
    done = subprocess.run(
        [sys.executable, "-c", SECOND_SIGNAL, "0.5"],
        cwd=ROOT,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 128 + signal.SIGTERM, done.stdout + done.stderr
    assert "still running, requested True SIGUSR1" in done.stdout and "abort callback ran" in done.stdout
    assert "not reached" not in done.stdout and "second signal (SIGTERM)" in done.stderr


def make_trainer(path, *overrides) -> Trainer:
    from pecan import config as cfgmod

    return Trainer.from_config(cfgmod.load(path, list(overrides)), discover({}), torch.device("cpu"))


def fit_closed(trainer: Trainer) -> None:
    try:
        trainer.fit()
    finally:
        trainer.close()


def test_checkpoint_every_steps_resumes_at_the_next_step_exactly(tmp_path):
    path, _ = tiny_run(tmp_path)
    full_dir, cut_dir = tmp_path / "full", tmp_path / "cut"
    settings = [*EXACT, "train.epochs=1", "train.checkpoint_every_steps=4"]
    full = make_trainer(path, *settings, f"train.out_dir={full_dir}")
    steps = full.steps_per_epoch()
    fit_closed(full)
    state = ckpt.load_checkpoint(full_dir / "checkpoints" / "mid_epoch.pt")
    last_multiple = (steps - 1) // 4 * 4
    assert state["position"]["done"] == last_multiple and state["step"] == last_multiple and last_multiple >= 4
    # A run killed after that checkpoint: only mid_epoch.pt survives; resume finishes the same epoch.
    (cut_dir / "checkpoints").mkdir(parents=True)
    shutil.copy(full_dir / "checkpoints" / "mid_epoch.pt", cut_dir / "checkpoints" / "mid_epoch.pt")
    resumed = make_trainer(path, *settings, f"train.out_dir={cut_dir}")
    assert resumed.start_epoch == 0 and resumed.position.done == last_multiple
    fit_closed(resumed)
    assert_same_weights(weights(full_dir), weights(cut_dir))
    assert (
        report.read_records(cut_dir / "epochs.jsonl")[0]["samples"]
        == report.read_records(full_dir / "epochs.jsonl")[0]["samples"]
    )


def test_checkpoint_every_minutes_writes_mid_epoch(tmp_path):
    path, _ = tiny_run(tmp_path)
    trainer = make_trainer(
        path, "train.epochs=1", "train.checkpoint_every_minutes=0.000001", f"train.out_dir={tmp_path / 'run'}"
    )
    fit_closed(trainer)
    state = ckpt.load_checkpoint(tmp_path / "run" / "checkpoints" / "mid_epoch.pt")
    assert state["position"]["done"] == trainer.steps_per_epoch() - 1  # each step but the epoch's last


def test_stop_in_process_raises_run_stopped_after_one_step(tmp_path):
    path, _ = tiny_run(tmp_path)
    trainer = make_trainer(path, f"train.out_dir={tmp_path / 'run'}")
    signals = StopSignals("none").install()
    try:
        trainer.lifecycle.attach(signals)
        os.kill(os.getpid(), signal.SIGINT)
        with pytest.raises(RunStopped, match="stopped at epoch 1 step 1; rerun the same command to resume"):
            trainer.fit()
    finally:
        signals.restore()
        trainer.close()
    assert not (tmp_path / "run" / ".pecan.lock").exists()


# ---------------------------------------------------------------------------- damaged files


def one_epoch(tmp_path, trained_run) -> Path:
    """The session's finished one-epoch tiny run, copied to tmp_path/run; returns its config path."""
    path, _ = trained_run.copy_to(tmp_path)
    return path


@pytest.mark.parametrize("damage", ["truncate", "garbage", "foreign"])
def test_damaged_last_checkpoint_falls_back_to_best_with_a_warning(tmp_path, trained_run, caplog, damage):
    path = one_epoch(tmp_path, trained_run)
    directory = tmp_path / "run" / "checkpoints"
    last = directory / "last.pt"
    if damage == "truncate":
        last.write_bytes(last.read_bytes()[:1000])
    elif damage == "garbage":
        last.write_bytes(b"\x00garbage" * 50)
    else:
        torch.save({"where": Path("/etc")}, last)
    os.utime(last)  # newest file: it is tried first
    caplog.set_level("WARNING")
    chosen, state = ckpt.newest_intact(tmp_path / "run")
    assert chosen == directory / "best.pt" and state.epoch == 1
    assert "last.pt" in caplog.text and "damaged" in caplog.text and "resuming from" in caplog.text
    assert "weights_only" not in caplog.text
    assert main_app.main([str(path), "--set", "train.epochs=2"]) == 0
    assert [r["epoch"] for r in report.read_records(tmp_path / "run" / "epochs.jsonl")] == [1, 2]


def test_every_checkpoint_damaged_is_an_error_naming_them(tmp_path, trained_run, capsys):
    path = one_epoch(tmp_path, trained_run)
    for name in ("last.pt", "best.pt"):
        (tmp_path / "run" / "checkpoints" / name).write_bytes(b"junk")
    assert main_app.main([str(path)]) == 2
    err = capsys.readouterr().err
    assert "last.pt" in err and "best.pt" in err and "damaged" in err and "weights_only" not in err


def test_damaged_epochs_line_is_named_with_file_and_line(tmp_path, trained_run, caplog):
    path = one_epoch(tmp_path, trained_run)
    epochs = tmp_path / "run" / "epochs.jsonl"
    epochs.write_text(epochs.read_text() + '{"epoch": 2, "wall_s": 1.\n')
    with pytest.raises(DataError, match=r"epochs.jsonl:2: damaged record"):
        report.read_records(epochs)
    caplog.set_level("ERROR")
    assert main_app.main([str(path), "--set", "train.epochs=2"]) == 1
    assert f"{epochs}:2" in caplog.text


def test_rerun_of_a_finished_run_says_so(tmp_path, trained_run, capsys):
    path = one_epoch(tmp_path, trained_run)
    capsys.readouterr()
    assert main_app.main([str(path), "--set", "train.epochs=1"]) == 0
    out = capsys.readouterr().out
    assert "is finished: all 1 epochs are done" in out and "train.epochs" in out


# ---------------------------------------------------------------------------- unusable out_dir


def test_out_dir_that_is_a_file_exits_2_naming_path_and_errno(tmp_path, caplog):
    path, _ = tiny_run(tmp_path)
    (tmp_path / "run").write_text("not a directory")
    caplog.set_level("ERROR")
    assert main_app.main([str(path)]) == 2
    assert str(tmp_path / "run") in caplog.text and "ENOTDIR" in caplog.text


def test_out_dir_on_a_read_only_mount_exits_2_naming_path_and_errno(tmp_path, caplog, mounts):
    path, _ = tiny_run(tmp_path)
    source = tmp_path / "source"
    (source / "run").mkdir(parents=True)
    view = mounts.read_only(source, tmp_path / "ro")
    caplog.set_level("ERROR")
    assert main_app.main([str(path), "--set", f"train.out_dir={view / 'run'}"]) == 2
    assert str(view / "run") in caplog.text and "EROFS" in caplog.text


def test_force_unlock_flag_takes_a_live_looking_lock(tmp_path, caplog):
    import json

    path, _ = tiny_run(tmp_path)
    lock = tmp_path / "run" / ".pecan.lock"
    lock.parent.mkdir(parents=True)
    lock.write_text(json.dumps({"host": "node0042", "pid": 1, "job_id": "9", "token": "t"}))
    settings = ["--set", "train.epochs=1", "--set", "train.max_steps_per_epoch=1"]
    caplog.set_level("INFO")
    assert main_app.main([str(path), *settings]) == 2
    assert "node0042" in caplog.text and "--force-unlock" in caplog.text
    assert main_app.main([str(path), *settings, "--force-unlock"]) == 0
    assert "taking over the lock" in caplog.text and not lock.exists()


def test_signal_during_evaluation_stops_after_that_epoch(tmp_path):
    path, _ = tiny_run(tmp_path)
    trainer = make_trainer(path, "train.epochs=2", f"train.out_dir={tmp_path / 'run'}")
    signals = StopSignals("SIGUSR1").install()
    evaluate = trainer.evaluate

    def evaluate_then_signal(*args, **kwargs):
        metrics = evaluate(*args, **kwargs)
        os.kill(os.getpid(), signal.SIGUSR1)  # arrives after the epoch's last step
        return metrics

    trainer.evaluate = evaluate_then_signal
    steps = trainer.steps_per_epoch()
    try:
        trainer.lifecycle.attach(signals)
        with pytest.raises(RunStopped, match=f"stopped at epoch 1 step {steps};"):
            trainer.fit()
    finally:
        signals.restore()
        trainer.close()
    records = report.read_records(tmp_path / "run" / "epochs.jsonl", events=True)
    assert [r.get("event") for r in records] == [None, "stopped"]
    assert "last.pt resumes at epoch 2" in records[1]["message"]
    assert not (tmp_path / "run" / "checkpoints" / "mid_epoch.pt").exists()
    resumed = make_trainer(path, "train.epochs=2", f"train.out_dir={tmp_path / 'run'}")
    assert resumed.start_epoch == 1 and resumed.position is None
    fit_closed(resumed)
