"""The bad-input catalogue, part 3: optional extras that are missing, shard paths spelled two ways, index
CSV headers, resume after a fallback, JSON that is JSON, clean stops, damaged locks, empty records,
unreadable shard attributes and ranks that disagree. Each case asserts the exit code and that the message
names the file, column, pose or rank."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from tests.procs import app_argv, clean_env
from tests.shards import write_dataset
from tests.test_bad_inputs import ROOT, edit_csv, records, run


@pytest.fixture
def data_dir(tmp_path):
    """2 shards x 3 complexes x (3 poses + crystal) and index.csv with relative shard names."""
    directory = tmp_path / "data"
    write_dataset(directory, n_shards=2, n_complexes=3, n_poses=3)
    return directory


# ---------------------------------------------------------------------------- optional extras


def without_modules(tmp_path: Path, *names: str) -> dict[str, str]:
    """A clean environment whose interpreter cannot import ``names`` (a sitecustomize on PYTHONPATH
    sets them to None in sys.modules, so ``import name`` raises ImportError) — a venv without the extra."""
    site = tmp_path / "no-extras"
    site.mkdir()
    lines = ["import sys"] + [f"sys.modules[{name!r}] = None" for name in names]
    (site / "sitecustomize.py").write_text("\n".join(lines) + "\n")
    env = clean_env()
    env["PYTHONPATH"] = f"{site}:{env['PYTHONPATH']}"
    return env


@pytest.mark.slow
@pytest.mark.parametrize(
    "blocked, warnings",
    [
        (("matplotlib", "tensorboard", "dftracer"), ["matplotlib is missing", "tensorboard is missing"]),
        (("dftracer.python",), []),  # the package is there but its native part does not load
    ],
)
def test_missing_optional_extras_cost_a_warning_never_the_exit_code(tmp_path, make_config, blocked, warnings):
    path, config = make_config(
        {"train.epochs": 1, "train.plots": True, "train.tensorboard": True, "trace.enabled": True},
        "train.max_steps_per_epoch=2",
    )
    env = without_modules(tmp_path, *blocked)
    done = subprocess.run(app_argv(path), cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    text = done.stdout + done.stderr
    assert done.returncode == 0, text[-3000:]
    assert "Traceback" not in text
    for warning in [*warnings, "native dftracer library is missing"]:
        assert text.count(warning) == 1, (warning, text[-3000:])
    assert len(report_lines(config.train.out_dir)) == 1


def report_lines(out_dir) -> list[dict]:
    lines = (Path(out_dir) / "epochs.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines if line.strip()]


# ---------------------------------------------------------------------------- shard paths spelled two ways


@pytest.mark.parametrize("spelling", ["{dir}//shard_0.hdf5", "{dir}/./shard_0.hdf5", "./shard_0.hdf5"])
@pytest.mark.slow
def test_shard_path_spelled_another_way_is_the_same_shard(tmp_path, data_dir, caplog, capsys, spelling):
    """A shard named ``dir//shard_0.hdf5`` beside plainly named shards trains all of its samples once."""
    rows = len(pd.read_csv(data_dir / "index.csv"))
    edit_csv(
        data_dir,
        lambda f: f.assign(
            shard=[spelling.format(dir=data_dir) if s == "shard_0.hdf5" else str(data_dir / s) for s in f["shard"]]
        ),
    )
    code, text = run(tmp_path, data_dir, caplog=caplog, capsys=capsys)
    assert code == 0, text
    assert "skipped" not in text.replace("skipped_", "") and "dropped" not in text
    assert f"index index.csv: {rows} samples" in text
    assert records(tmp_path)[0]["skipped_at_start"] == 0


def test_no_usable_samples_left_says_why(tmp_path, data_dir, caplog, capsys):
    edit_csv(data_dir, lambda f: f.assign(label=2))
    code, text = run(tmp_path, data_dir, "data.on_bad_sample=skip", caplog=caplog, capsys=capsys)
    assert code == 1
    assert "no usable samples left after dropping" in text
    assert "label must be 0 or 1" in text.split("no usable samples left")[1]


# ---------------------------------------------------------------------------- index CSV headers


@pytest.mark.parametrize("column", ["is_crystal", "num_hbonds", "pbond"])
def test_index_csv_without_a_column_that_changes_training_is_named(tmp_path, data_dir, caplog, capsys, column):
    """Without is_crystal every crystal pose would count as docked; without a count every pose would read 0."""
    edit_csv(data_dir, lambda f: f.drop(columns=[column]))
    code, text = run(tmp_path, data_dir, caplog=caplog, capsys=capsys)
    assert code == 1
    assert "index.csv" in text and f"missing required column(s) {column}" in text


def test_index_csv_with_a_header_column_twice_is_named(tmp_path, data_dir, caplog, capsys):
    csv = data_dir / "index.csv"
    lines = csv.read_text().splitlines()
    lines = [lines[0] + ",label"] + [line + ",0" for line in lines[1:]]
    csv.write_text("\n".join(lines) + "\n")
    code, text = run(tmp_path, data_dir, caplog=caplog, capsys=capsys)
    assert code == 1
    assert "index.csv" in text and "column 'label' appears 2 times in the header" in text


# ---------------------------------------------------------------------------- resume after a fallback


@pytest.mark.slow
def test_resume_from_best_after_a_damaged_last_keeps_each_epoch_once(tmp_path, data_dir, caplog, capsys):
    """best.pt holds epoch 1, last.pt (epoch 3) is damaged: epochs 2 and 3 are trained again, and
    epochs.jsonl reads 1, 2, 3, 4 — the abandoned records are superseded, not kept beside the new ones."""
    checkpoints = tmp_path / "run" / "checkpoints"
    assert run(tmp_path, data_dir, caplog=caplog, capsys=capsys)[0] == 0
    epoch_one = (checkpoints / "last.pt").read_bytes()
    assert run(tmp_path, data_dir, "train.epochs=3", caplog=caplog, capsys=capsys)[0] == 0
    assert [r["epoch"] for r in records(tmp_path)] == [1, 2, 3]
    (checkpoints / "best.pt").write_bytes(epoch_one)
    (checkpoints / "last.pt").write_bytes(b"not a checkpoint")
    code, text = run(tmp_path, data_dir, "train.epochs=4", caplog=caplog, capsys=capsys)
    assert code == 0, text
    assert "resumed from" in text and "best.pt after epoch 1" in text
    assert "superseded" in text
    assert [r["epoch"] for r in records(tmp_path)] == [1, 2, 3, 4]


@pytest.mark.slow
def test_resume_after_the_labels_changed_in_place_says_so(tmp_path, data_dir, caplog, capsys):
    """Labels flipped in the index CSV between two starts of one run: the resumed run warns, naming the
    checkpoint and both digests; an unchanged index resumes without the warning."""
    assert run(tmp_path, data_dir, caplog=caplog, capsys=capsys)[0] == 0
    code, text = run(tmp_path, data_dir, "train.epochs=3", caplog=caplog, capsys=capsys)
    assert code == 0 and "resumed from" in text and "training data changed" not in text
    caplog.clear()
    edit_csv(data_dir, lambda f: f.assign(label=1 - f["label"], rmsd=""))
    code, text = run(tmp_path, data_dir, "train.epochs=4", caplog=caplog, capsys=capsys)
    assert code == 0, text
    assert caplog.text.count("the training data changed since checkpoint") == 1 and "last.pt" in text


# ---------------------------------------------------------------------------- JSON that is JSON; 2D ligands


def strict_json(text: str):
    def refuse(constant):
        raise ValueError(f"bare {constant} is not JSON")

    return json.loads(text, parse_constant=refuse)


def test_files_written_as_json_hold_null_never_bare_nan(tmp_path):
    import numpy as np

    from pecan import report
    from pecan.engine.state import CheckpointState
    from pecan.scoring import shards as predict

    record = {"epoch": 1, "val_auc": float("nan"), "per_rank": [1.0, float("inf"), np.float32("nan")]}
    report.append_record(tmp_path / "epochs.jsonl", record)
    assert strict_json((tmp_path / "epochs.jsonl").read_text()) == {
        "epoch": 1,
        "val_auc": None,
        "per_rank": [1.0, None, None],
    }
    scores = pd.DataFrame({c: [0] for c in predict.SCORE_COLUMNS})
    values = {"complexes": 1, "auc": float("nan"), "splits": {"test": {"complexes": 1, "auc": float("nan")}}}
    out = tmp_path / "scores.csv"
    try:
        predict.write_outputs(scores, values, out, CheckpointState(model={}, complexes={}))
    except (KeyError, TypeError):
        pass  # the summary lines want more figures; the metrics JSON is written before them
    assert strict_json(predict.metrics_path(out).read_text())["auc"] is None


def test_2d_ligand_is_named_2d_not_nm(tmp_path, data_dir, caplog, capsys):
    from tests.test_bad_inputs_more import rewrite_pose

    def flatten(atoms):
        ligand = atoms[:, 16] > 0
        atoms[ligand, 2] = 0.0
        atoms[ligand, :2] *= 0.4  # 2D depictions often have short bonds too
        return atoms

    rewrite_pose(data_dir, flatten)
    code, text = run(tmp_path, data_dir, caplog=caplog, capsys=capsys)
    assert code == 1
    assert "c000_pose0" in text and "ligand coordinates are 2D" in text and "look like nm" not in text


# ---------------------------------------------------------------------------- a second stop signal


@pytest.mark.slow
@pytest.mark.parametrize("gap", [0.5, 1.5])
def test_second_stop_signal_soon_after_the_first_still_stops_cleanly(make_config, gap):
    """The second SIGUSR1 lands while the stop is being written or the process is exiting: still rc 0."""
    import os
    import signal
    import time

    from tests.procs import act_at

    path, config = make_config({"train.epochs": 2})

    def twice(process):
        os.kill(process.pid, signal.SIGUSR1)
        time.sleep(gap)
        try:
            os.kill(process.pid, signal.SIGUSR1)
        except ProcessLookupError:
            pass  # already gone: nothing left to test in this interleaving

    code, out = act_at(app_argv(path), "threads:", twice)
    assert code == 0, out[-3000:]
    assert "stopped at epoch 1" in out and "Traceback" not in out
    assert (Path(config.train.out_dir) / "checkpoints" / "mid_epoch.pt").exists()


# ---------------------------------------------------------------------------- damaged locks


@pytest.mark.parametrize(
    "content",
    [
        b'{"host": "%HOST%", "pid": "abc", "token": "t"}',
        b"\xff\xfe\x00binary\x81",
        b"null",
        b"[1, 2]",
        b'{"host": "%HOST%", "pid": null}',
        b'{"host": "%HOST%", "pid": 1e400}',
    ],
)
def test_unreadable_lock_is_taken_over_with_a_clear_message(tmp_path, caplog, content):
    import platform

    from pecan.train.run_dir import LOCK_NAME, RunLock

    (tmp_path / LOCK_NAME).write_bytes(content.replace(b"%HOST%", platform.node().encode()))
    caplog.set_level(logging.WARNING)
    lock = RunLock(tmp_path).acquire(heartbeat=False)
    try:
        assert lock.owned()
        assert "taking over the lock" in caplog.text and LOCK_NAME in caplog.text
        assert "unreadable" in caplog.text
    finally:
        lock.release()


def test_lock_heartbeat_far_in_the_future_does_not_block_until_that_date(tmp_path, caplog):
    import os
    import time

    from pecan.train.run_dir import LOCK_NAME, RunLock

    path = tmp_path / LOCK_NAME
    path.write_text(json.dumps({"host": "elsewhere", "pid": 1, "job_id": "", "token": "old"}))
    later = time.time() + 365 * 86400
    os.utime(path, (later, later))
    caplog.set_level(logging.WARNING)
    lock = RunLock(tmp_path, stale_after_s=600).acquire(heartbeat=False)
    try:
        assert lock.owned() and "in the future" in caplog.text
    finally:
        lock.release()


# ---------------------------------------------------------------------------- empty records, bad attributes


@pytest.mark.parametrize("action", ["compare", "plot"])
@pytest.mark.parametrize("content", ["", "\n", '{"event": "stopped", "epoch": 0}\n'])
def test_runs_commands_on_an_empty_epochs_file_name_it(tmp_path, capsys, action, content):
    from pecan import cli

    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "epochs.jsonl").write_text(content)
    argv = ["runs", action, f"a={run_dir}"] if action == "compare" else ["runs", action, str(run_dir)]
    assert cli.main(argv) == 1
    err = capsys.readouterr().err
    assert str(run_dir / "epochs.jsonl") in err and "no epoch records" in err and "Traceback" not in err


@pytest.mark.parametrize("value", ["yes", b"yes"])
@pytest.mark.parametrize("index", ["csv", "derived"])
def test_shard_attribute_that_is_not_a_number_names_pose_and_attribute(
    tmp_path, data_dir, caplog, capsys, value, index
):
    import h5py

    from tests.test_bad_inputs import first_pose

    shard, pose = first_pose(data_dir)
    with h5py.File(shard, "a") as handle:
        handle[pose].attrs["label"] = value
    sets = ["data.train_csvs=null", "data.train_fns=[shard_0.hdf5, shard_1.hdf5]"] if index == "derived" else []
    code, text = run(tmp_path, data_dir, *sets, caplog=caplog, capsys=capsys)
    assert code == 1
    assert "shard_0.hdf5" in text and "c000/c000_pose0" in text and "attribute 'label' is 'yes', not a number" in text


@pytest.mark.parametrize("io_mode", ["packed", "reopen"])
def test_shard_compressed_with_a_missing_filter_names_shard_and_dataset(tmp_path, data_dir, caplog, capsys, io_mode):
    import h5py

    from tests.test_bad_inputs import first_pose

    shard, pose = first_pose(data_dir)
    with h5py.File(shard, "a") as handle:
        atoms = handle[f"{pose}/data"][()]
        del handle[f"{pose}/data"]
        blosc = handle[pose].create_dataset(
            "data",
            shape=atoms.shape,
            dtype=atoms.dtype,
            chunks=atoms.shape,
            compression=32001,
            allow_unknown_filter=True,
        )
        blosc.id.write_direct_chunk((0, 0), b"\x00" * 64)  # bytes only Blosc could decode
    code, text = run(tmp_path, data_dir, f"data.io_mode={io_mode}", caplog=caplog, capsys=capsys)
    assert code == 1
    assert "shard_0.hdf5" in text and f"{pose}/data" in text and "Blosc (32001)" in text
    assert "plugin" not in text.split("Blosc (32001)")[0][-300:]  # HDF5's plugin-path message is not the error


# ---------------------------------------------------------------------------- the rate of a resumed epoch


@pytest.mark.slow
def test_resumed_epoch_rate_counts_only_the_samples_of_this_part(make_config):
    import os
    import signal

    from tests.procs import act_at, run_ok

    path, config = make_config({"train.epochs": 1})
    code, out = act_at(app_argv(path), "threads:", lambda p: os.kill(p.pid, signal.SIGUSR1))
    assert code == 0 and "stopped at epoch 1 step 1" in out, out[-3000:]
    run_ok(app_argv(path))
    (record,) = report_lines(config.train.out_dir)[-1:]
    before = record["samples_before_resume"]
    assert before == config.data.batch_size  # step 1 ran before the stop
    assert record["samples"] > before
    assert record["samples_per_s"] == pytest.approx((record["samples"] - before) / record["wall_s"])


# ---------------------------------------------------------------------------- ranks that disagree


@pytest.mark.slow
@pytest.mark.multiprocess
def test_ranks_started_with_different_settings_stop_at_start_naming_ranks_and_key(make_config):
    import shlex

    from tests.ddp import run_ranks

    path, config = make_config({"train.epochs": 1})
    # The same command on both ranks; only rank 1 adds a --set (as a per-rank wrapper script might).
    line = shlex.join(app_argv(path)) + ' $([ "$RANK" = 1 ] && echo --set train.lr=0.3)'
    codes, out = run_ranks(["sh", "-c", line], check=False, timeout=240)
    assert codes == [2, 2], out[-4000:]
    assert "the ranks started with different settings: rank(s) 1 differ from rank 0" in out
    assert "train.lr: rank 0 0.003, rank 1 0.3" in out and "Traceback" not in out
    assert not (Path(config.train.out_dir) / "epochs.jsonl").exists()


def test_weights_that_differ_between_ranks_stop_the_run_naming_them(monkeypatch):
    import torch

    from pecan.engine.distributed import DistEnv
    from pecan.runtime.errors import RanksDisagree, exit_code
    from pecan.train import components

    monkeypatch.setattr(
        components, "gather_varlen", lambda t, env, what="": torch.tensor([1.5, 1.5, 2.5], dtype=t.dtype)
    )
    env = DistEnv(
        rank=0,
        world_size=3,
        local_rank=0,
        local_world_size=3,
        master_addr="127.0.0.1",
        master_port=1,
        launcher="single",
    )
    with pytest.raises(RanksDisagree, match=r"rank\(s\) 2 disagree with rank 0") as err:
        components.weights_in_sync(torch.nn.Linear(2, 1), env, torch.device("cpu"))
    assert exit_code(err.value) == 1
    monkeypatch.setattr(components, "gather_varlen", lambda t, env, what="": torch.tensor([1.5, 1.5], dtype=t.dtype))
    assert components.weights_in_sync(torch.nn.Linear(2, 1), env, torch.device("cpu"))["ranks_in_sync"] is True


# ---------------------------------------------------------------------------- the same class elsewhere


@pytest.mark.parametrize(
    "text, message",
    [
        ("complex_id,receptor,receptor\na,r.pdb,s.pdb\n", "column 'receptor' appears 2 times in the header"),
        ("", "is not a valid CSV"),
        ('complex_id,receptor\n"a,r.pdb\n', "is not a valid CSV"),
    ],
)
def test_manifest_csv_with_a_repeated_column_or_no_csv_is_named(tmp_path, text, message):
    from pecan.runtime.manifest import read_manifest_frame

    path = tmp_path / "manifest.csv"
    path.write_text(text)
    with pytest.raises(ValueError, match="manifest .*manifest.csv") as err:
        read_manifest_frame(path, ("complex_id", "receptor"), ())
    assert message in str(err.value)


def test_a_plot_that_fails_costs_a_warning_not_the_finished_run(tmp_path, caplog, monkeypatch):
    from pecan import plots, report
    from pecan.train.records import RunFiles

    def broken(*args, **kwargs):
        raise RuntimeError("no usable font")

    monkeypatch.setattr(plots, "write_plots", broken)
    report.append_record(tmp_path / "epochs.jsonl", {"epoch": 1, "wall_s": 1.0, "samples": 4})
    caplog.set_level(logging.WARNING)
    RunFiles(tmp_path).write_summary(plots=True)
    assert "the plots were not written (RuntimeError: no usable font)" in caplog.text


def torch_closure() -> list:
    """The installed distributions of torch and of everything torch requires (on this platform)."""
    from importlib import metadata

    from packaging.requirements import Requirement

    found, todo = {}, ["torch"]
    while todo:
        dist = metadata.distribution(todo.pop())
        if dist.metadata["Name"].lower() in found:
            continue
        found[dist.metadata["Name"].lower()] = dist
        for text in dist.requires or []:
            requirement = Requirement(text)
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                todo.append(requirement.name)
    return list(found.values())


def venv_with_torch(venv: Path) -> Path:
    """A fresh venv that already holds a torch, as a cluster's environment holds its own build: this
    interpreter's torch and the distributions torch requires are linked into the venv's site-packages (files
    and dist-info, so pip sees them installed), nothing else. Returns the venv's python."""
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    site = venv / "lib" / version / "site-packages"
    for dist in torch_closure():
        tops = {Path(str(f)).parts[0] for f in dist.files or [] if not str(f).startswith("..")}
        tops.discard("__pycache__")
        if any((site / top).exists() for top in tops):  # the venv has its own (pip, setuptools)
            continue
        for top in tops:
            (site / top).symlink_to(Path(str(dist.locate_file(top))))
    return venv / "bin" / "python"


@pytest.mark.slow
def test_the_readme_cluster_install_without_extras_finishes_a_demo_shaped_run(tmp_path, make_config):
    """`pip install -e .` alone (the README's cluster install: no plots, tensorboard or native tracing) into a
    fresh venv, then a run with plots and TensorBoard on (train.plots defaults to true): exit 0, one warning
    per missing extra.

    The README's cluster install runs in an environment that already has torch ("uses the torch already in
    your environment"), so the venv starts with this interpreter's torch linked in (``venv_with_torch``):
    pip then resolves and installs every other requirement of setup.py from the package index, as on a
    cluster, without spending most of the test unpacking a second copy of torch."""
    python = venv_with_torch(tmp_path / "venv")
    install = [str(python), "-m", "pip", "install", "-q", "-c", str(ROOT / "constraints-cpu.txt"), "-e", str(ROOT)]
    done = subprocess.run(install, capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    torch_dirs = list((tmp_path / "venv" / "lib").glob("python*/site-packages/torch"))
    assert [d.is_symlink() for d in torch_dirs] == [True], "pip replaced the environment's torch"
    for extra in ("matplotlib", "tensorboard"):
        probe = subprocess.run([str(python), "-c", f"import {extra}"], capture_output=True, timeout=120)
        assert probe.returncode != 0, f"{extra} came with the base install: the test would prove nothing"
    path, config = make_config({"train.epochs": 1, "train.plots": True, "train.tensorboard": True})
    env = clean_env()
    env.pop("PYTHONPATH")  # the venv's own editable install of this checkout, nothing of the test's interpreter
    run = subprocess.run(
        [str(python), "-u", str(ROOT / "main_app.py"), str(path), "--set", "train.max_steps_per_epoch=2"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    text = run.stdout + run.stderr
    assert run.returncode == 0, text[-3000:]
    assert "Traceback" not in text
    assert text.count("matplotlib is missing") == 1 and text.count("tensorboard is missing") == 1, text[-3000:]
    assert len(report_lines(config.train.out_dir)) == 1
