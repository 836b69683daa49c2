"""The bad-input catalogue: every damaged shard, CSV, config and run directory gets a clear exit code and a
message naming the file / key / pose, or (under a skip switch) a counted skip. The README lists the same
cases. Runs go through main_app.main in-process; only the kill -9 cases need subprocesses."""

from __future__ import annotations

import logging
import math
import os
import platform
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import h5py
import numpy as np
import pandas as pd
import pytest

import main_app
from pecan import config as cfgmod
from pecan import report
from pecan.data import layout
from tests import configs
from tests.configs import DROP, SMALL_MODEL
from tests.procs import clean_env
from tests.shards import set_atom_value, write_dataset

ROOT = Path(__file__).resolve().parents[1]
POSES = layout.DEFAULT_POSE_GROUP


# ---------------------------------------------------------------------------- helpers


@pytest.fixture
def data_dir(tmp_path):
    """2 shards x 3 complexes x (3 poses + crystal) and index.csv with relative shard names."""
    directory = tmp_path / "data"
    write_dataset(directory, n_shards=2, n_complexes=3, n_poses=3)
    return directory


def write_config(tmp_path: Path, data_dir: Path, extra: str = "") -> Path:
    """A tiny, fast run config (tests/configs.py: one line per section); ``extra`` is appended YAML."""
    settings = {
        "data.data_dir": str(data_dir),
        "data.val_fraction": 0.34,
        "model": SMALL_MODEL,
        "train.epochs": 1,
        "train.plots": DROP,  # the default, as a user's config leaves it
    }
    return configs.write_config(tmp_path, settings, extra_yaml=extra, dataset={})


def run(tmp_path, data_dir, *sets, caplog, capsys, extra: str = "") -> tuple[int, str]:
    """main_app.main in-process; returns (exit code, stderr + log text)."""
    caplog.set_level(logging.INFO)
    argv = [str(write_config(tmp_path, data_dir, extra))]
    for item in sets:
        argv += ["--set", item]
    code = main_app.main(argv)
    return code, capsys.readouterr().err + caplog.text


def records(tmp_path) -> list[dict]:
    return report.read_records(tmp_path / "run" / "epochs.jsonl")


def edit_csv(data_dir: Path, change) -> None:
    frame = pd.read_csv(data_dir / "index.csv", dtype={"pdbid": str, "poseid": str})
    change(frame).to_csv(data_dir / "index.csv", index=False)


def first_pose(data_dir: Path) -> tuple[Path, str]:
    """(shard, HDF5 path of its first docked pose group)."""
    return data_dir / "shard_0.hdf5", f"c000/{POSES}/c000_pose0"


# ---------------------------------------------------------------------------- silently wrong data


def test_duplicated_csv_rows_error_naming_line(tmp_path, data_dir, caplog, capsys):
    edit_csv(data_dir, lambda f: pd.concat([f, f.iloc[:5]], ignore_index=True))
    code, text = run(tmp_path, data_dir, caplog=caplog, capsys=capsys)
    assert code == 1
    assert "index.csv" in text and "duplicate sample" in text and "5 such row(s)" in text
    assert not (tmp_path / "run" / ".pecan.lock").exists()  # a failed start releases out_dir
    assert not (tmp_path / "run" / "config.yaml").exists()  # written only after a successful start


def test_duplicated_csv_rows_dropped_with_count_under_skip(tmp_path, data_dir, caplog, capsys):
    edit_csv(data_dir, lambda f: pd.concat([f, f.iloc[:5]], ignore_index=True))
    code, text = run(
        tmp_path, data_dir, "data.on_bad_sample=skip", "train.max_steps_per_epoch=1", caplog=caplog, capsys=capsys
    )
    assert code == 0, text
    assert records(tmp_path)[0]["skipped_at_start"] == 5
    assert "24 samples of 6 complexes (5 bad row(s) dropped)" in text


def test_shard_listed_twice_is_an_error(tmp_path, data_dir, caplog, capsys):
    code, text = run(
        tmp_path,
        data_dir,
        "data.train_csvs=null",
        'data.train_fns=["*.hdf5", "shard_0.hdf5"]',
        caplog=caplog,
        capsys=capsys,
    )
    assert code == 1 and "shard_0.hdf5 is listed more than once" in text


@pytest.mark.parametrize("label", [2, -1])
def test_label_outside_0_1_names_line(tmp_path, data_dir, caplog, capsys, label):
    edit_csv(data_dir, lambda f: f.assign(label=[label] + list(f["label"][1:])))
    code, text = run(tmp_path, data_dir, caplog=caplog, capsys=capsys)
    assert code == 1
    assert "index.csv: line 2" in text and "label must be 0 or 1" in text and f"got {label}" in text


def test_non_numeric_label_names_file_line_column(tmp_path, data_dir, caplog, capsys):
    edit_csv(data_dir, lambda f: f.assign(label=["yes"] + list(f["label"][1:])))
    code, text = run(tmp_path, data_dir, caplog=caplog, capsys=capsys)
    assert code == 1 and "index.csv, line 2, column 'label': is not a number: 'yes'" in text


def test_negative_rmsd_names_pose(tmp_path, data_dir, caplog, capsys):
    edit_csv(data_dir, lambda f: f.assign(rmsd=list(f["rmsd"][:3]) + [-0.5] + list(f["rmsd"][4:])))
    code, text = run(tmp_path, data_dir, caplog=caplog, capsys=capsys)
    assert code == 1 and "line 5" in text and "rmsd must be >= 0" in text


# ---------------------------------------------------------------------------- a wrong CSV never swaps the data set


def test_csv_missing_column_is_an_error_not_a_fallback(tmp_path, data_dir, caplog, capsys):
    edit_csv(data_dir, lambda f: f.drop(columns=["poseid"]))
    code, text = run(tmp_path, data_dir, 'data.train_fns=["*.hdf5"]', caplog=caplog, capsys=capsys)
    assert code == 1 and "index.csv: missing required column(s) poseid" in text
    assert "deriving the index" not in text


def test_csv_wrong_shard_path_names_line_and_column(tmp_path, data_dir, caplog, capsys):
    edit_csv(data_dir, lambda f: f.assign(shard=["shard_9.hdf5"] + list(f["shard"][1:])))
    code, text = run(tmp_path, data_dir, 'data.train_fns=["*.hdf5"]', caplog=caplog, capsys=capsys)
    assert code == 1 and "line 2, column 'shard': shard file not found" in text and "shard_9.hdf5" in text


@pytest.mark.parametrize("how", ["missing", "directory"])
def test_unreadable_csv_falls_back_to_the_shards(tmp_path, data_dir, caplog, capsys, how):
    (data_dir / "index.csv").unlink()
    if how == "directory":
        (data_dir / "index.csv").mkdir()
    code, text = run(
        tmp_path, data_dir, 'data.train_fns=["*.hdf5"]', "train.max_steps_per_epoch=1", caplog=caplog, capsys=capsys
    )
    assert code == 0, text
    assert "cannot read index CSV" in text and "deriving the index" in text


# ---------------------------------------------------------------------------- raw exceptions become named errors


def derive(*sets):
    return ("data.train_csvs=null", 'data.train_fns=["*.hdf5"]', *sets)


def test_truncated_shard_names_shard(tmp_path, data_dir, caplog, capsys):
    shard = data_dir / "shard_1.hdf5"
    shard.write_bytes(shard.read_bytes()[: shard.stat().st_size // 2])
    code, text = run(tmp_path, data_dir, caplog=caplog, capsys=capsys)
    assert code == 1 and "shard_1.hdf5" in text and "Traceback" not in text


def test_truncated_shard_skipped_with_count(tmp_path, data_dir, caplog, capsys):
    shard = data_dir / "shard_1.hdf5"
    shard.write_bytes(shard.read_bytes()[: shard.stat().st_size // 2])
    code, text = run(
        tmp_path, data_dir, "data.on_bad_sample=skip", "train.max_steps_per_epoch=1", caplog=caplog, capsys=capsys
    )
    assert code == 0, text
    assert records(tmp_path)[0]["skipped_at_start"] == 12  # all 3 x (3 + crystal) samples of shard_1
    assert "shard_1.hdf5" in text


def test_extra_dataset_in_pose_group_names_complex(tmp_path, data_dir, caplog, capsys):
    with h5py.File(data_dir / "shard_0.hdf5", "a") as handle:
        handle[f"c001/{POSES}"].create_dataset("stray", data=np.zeros(3))
    code, text = run(tmp_path, data_dir, *derive(), caplog=caplog, capsys=capsys)
    assert code == 1 and "shard_0.hdf5, complex c001: unreadable (AttributeError" in text


def test_empty_attribute_names_complex(tmp_path, data_dir, caplog, capsys):
    with h5py.File(data_dir / "shard_0.hdf5", "a") as handle:
        handle[f"c002/{POSES}/c002_pose1"].attrs["rmsd"] = np.zeros(0)
    code, text = run(tmp_path, data_dir, *derive(), caplog=caplog, capsys=capsys)
    assert code == 1 and "pose c002/c002_pose1: attribute 'rmsd' is empty, not a number" in text


@pytest.mark.parametrize("io_mode", ["packed", "reopen"])
def test_data_stored_as_group_names_pose(tmp_path, data_dir, caplog, capsys, io_mode):
    shard, pose = first_pose(data_dir)
    with h5py.File(shard, "a") as handle:
        del handle[f"{pose}/data"]
        handle.create_group(f"{pose}/data")
    code, text = run(tmp_path, data_dir, f"data.io_mode={io_mode}", caplog=caplog, capsys=capsys)
    assert code == 1 and "shard_0.hdf5, pose c000/c000_pose0" in text and "Traceback" not in text


@pytest.mark.parametrize("key, value", [("max_atoms", 10), ("max_edges", 5)])
def test_oversize_pose_rejected_before_edges(tmp_path, data_dir, caplog, capsys, key, value):
    code, text = run(tmp_path, data_dir, f"data.{key}={value}", caplog=caplog, capsys=capsys)
    assert code == 1 and f"data.{key}={value}" in text and "shard_" in text and ", pose c" in text


# ---------------------------------------------------------------------------- skip skips what it says


@pytest.mark.parametrize("io_mode", ["packed", "handle_cache"])
def test_bad_pose_skip_counted_on_every_io_mode(tmp_path, data_dir, caplog, capsys, io_mode):
    shard, pose = first_pose(data_dir)
    with h5py.File(shard, "a") as handle:
        set_atom_value(handle[pose], 0, 0, np.nan)
    code, text = run(
        tmp_path,
        data_dir,
        "data.on_bad_sample=skip",
        f"data.io_mode={io_mode}",
        "data.val_fraction=0.5",
        caplog=caplog,
        capsys=capsys,
    )
    assert code == 0, text
    record = records(tmp_path)[0]
    assert record["skipped_at_start"] + record["skipped_samples"] >= 1
    assert "c000/c000_pose0" in text and "NaN" in text


def test_complex_without_pose_group_skipped_in_index_and_packs(tmp_path, data_dir, caplog, capsys):
    with h5py.File(data_dir / "shard_0.hdf5", "a") as handle:
        del handle[f"c001/{POSES}"]
    code, text = run(
        tmp_path,
        data_dir,
        *derive("data.on_bad_sample=skip", "train.max_steps_per_epoch=1"),
        caplog=caplog,
        capsys=capsys,
    )
    assert code == 0, text
    assert records(tmp_path)[0]["skipped_at_start"] == 1
    assert "complex c001 has no pose group" in text


@pytest.mark.slow
def test_non_hdf5_shard_skipped_under_skip(tmp_path, data_dir, caplog, capsys):
    (data_dir / "shard_1.hdf5").write_bytes(b"not an hdf5 file" * 100)
    code, text = run(
        tmp_path, data_dir, "data.on_bad_sample=skip", "train.max_steps_per_epoch=1", caplog=caplog, capsys=capsys
    )
    assert code == 0, text
    assert records(tmp_path)[0]["skipped_at_start"] == 12 and "shard_1.hdf5" in text


# ---------------------------------------------------------------------------- run integrity


def test_second_run_on_out_dir_exits_2_naming_holder(tmp_path, data_dir, caplog, capsys):
    holder = subprocess.Popen(["sleep", "60"])
    try:
        lock = tmp_path / "run" / ".pecan.lock"
        lock.parent.mkdir(parents=True)
        lock.write_text(f'{{"host": "{platform.node()}", "pid": {holder.pid}, "started": "now"}}')
        code, text = run(tmp_path, data_dir, caplog=caplog, capsys=capsys)
    finally:
        holder.kill()
        holder.wait()
    assert code == 2 and f"pid {holder.pid}" in text and platform.node() in text
    assert not (tmp_path / "run" / "epochs.jsonl").exists()


@pytest.mark.slow
def test_stale_lock_and_temp_files_are_cleaned(tmp_path, data_dir, caplog, capsys):
    dead = subprocess.Popen(["true"])
    dead.wait()
    run_dir = tmp_path / "run"
    (run_dir / "checkpoints").mkdir(parents=True)
    (run_dir / ".pecan.lock").write_text(f'{{"host": "{platform.node()}", "pid": {dead.pid}}}')
    stale = [run_dir / ".epochs.jsonl.abc123.tmp", run_dir / "checkpoints" / ".last.pt.xyz.tmp"]
    for path in stale:
        path.write_text("partial")
    code, text = run(tmp_path, data_dir, "train.max_steps_per_epoch=1", caplog=caplog, capsys=capsys)
    assert code == 0, text
    assert not any(path.exists() for path in stale) and "taking over the lock of a dead run" in text
    assert not (run_dir / ".pecan.lock").exists()  # released at the end


@pytest.mark.slow
def test_failed_resume_keeps_config_yaml(tmp_path, data_dir, caplog, capsys):
    code, _ = run(tmp_path, data_dir, "train.max_steps_per_epoch=1", caplog=caplog, capsys=capsys)
    assert code == 0
    saved = (tmp_path / "run" / "config.yaml").read_text()
    code, text = run(tmp_path, data_dir, "train.epochs=2", "model.hidden=12", caplog=caplog, capsys=capsys)
    assert code == 2 and "model.hidden: checkpoint 8, config 12" in text
    assert (tmp_path / "run" / "config.yaml").read_text() == saved


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


def test_disk_full_names_path(tmp_path, data_dir, caplog, capsys):
    mount = tmp_path / "small"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mount)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    try:
        code, text = run(
            tmp_path,
            data_dir,
            f"train.out_dir={mount / 'run'}",
            "model.hidden=64",
            "model.layers=3",
            "train.max_steps_per_epoch=1",
            caplog=caplog,
            capsys=capsys,
        )
    finally:
        unmounted = subprocess.run(["umount", str(mount)], check=False, capture_output=True, text=True)
    assert code == 1
    assert "disk full" in text and str(mount / "run") in text and "ENOSPC" in text
    # Nothing of the run (its per-rank log file included) stays open once main has returned.
    assert unmounted.returncode == 0, unmounted.stderr


# ---------------------------------------------------------------------------- kill -9 at the three write points

KILLER = textwrap.dedent("""
    import os, signal, sys
    import main_app
    from pecan import report
    from pecan.engine import checkpoint

    point, target = sys.argv[1], int(sys.argv[2])
    saves = []
    real_save, real_write, real_replace = checkpoint.save_checkpoint, checkpoint._write_bytes, os.replace

    def half_then_die(out, data):
        real_write(out, data[:len(data) // 2])
        out.flush()
        os.kill(os.getpid(), signal.SIGKILL)

    def save(path, payload):
        if path.name == "last.pt":
            saves.append(path)
        hit = path.name == "last.pt" and len(saves) == target
        if hit and point == "checkpoint_temp":
            checkpoint._write_bytes = half_then_die
        result = real_save(path, payload)
        if hit and point == "after_checkpoint_rename":
            os.kill(os.getpid(), signal.SIGKILL)
        return result

    records = []
    def replace(src, dst, *args, **kwargs):
        if str(dst).endswith("epochs.jsonl"):
            records.append(dst)
            if point == "record_write" and len(records) == target:
                os.kill(os.getpid(), signal.SIGKILL)
        return real_replace(src, dst, *args, **kwargs)

    checkpoint.save_checkpoint = save
    os.replace = replace
    sys.exit(main_app.main(sys.argv[3:]))
""")


@pytest.mark.slow
@pytest.mark.parametrize(
    "point, temp_left",
    [
        ("checkpoint_temp", "checkpoints/.last.pt.*.tmp"),
        ("after_checkpoint_rename", None),
        ("record_write", ".epochs.jsonl.*.tmp"),
    ],
)
def test_kill_9_then_resume_keeps_every_epoch_once(tmp_path, data_dir, caplog, capsys, point, temp_left):
    config = write_config(tmp_path, data_dir)
    sets = ["--set", "train.epochs=3", "--set", "train.max_steps_per_epoch=2"]
    done = subprocess.run(
        [sys.executable, "-c", KILLER, point, "2", str(config), *sets],
        cwd=ROOT,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == -signal.SIGKILL, done.stderr[-2000:]
    run_dir = tmp_path / "run"
    assert (run_dir / ".pecan.lock").exists()  # the killed run could not release it
    if temp_left:
        assert list(run_dir.glob(temp_left)), "the kill should leave the writer's temp file behind"
    caplog.set_level(logging.INFO)
    assert main_app.main([str(config), *sets]) == 0
    epochs = [r["epoch"] for r in report.read_records(run_dir / "epochs.jsonl")]
    assert epochs == [1, 2, 3]
    assert not list(run_dir.glob("**/*.tmp")) and not (run_dir / ".pecan.lock").exists()


# ---------------------------------------------------------------------------- config values, checked at load


@pytest.mark.parametrize(
    "setting, key",
    [
        ("train.device=gpu", "train.device"),
        ("train.device=cuda", "train.device"),
        ("model.name=foo", "model.name"),
        ("model.nn_type=99", "model.nn_type"),
        ("model.nn_type=-3", "model.nn_type"),
        ("train.weight_decay=-1", "train.weight_decay"),
        ("train.warmup_steps=-1", "train.warmup_steps"),
        ("model.rbf=0", "model.rbf"),
        ("model.cutoff=-2", "model.cutoff"),
        ("train.seed=-3", "train.seed"),
        ("data.max_atoms=0", "data.max_atoms"),
        ("train.lr=.nan", "train.lr"),
        ("train.resume=/nowhere/last.pt", "train.resume"),
    ],
)
def test_invalid_values_exit_2_naming_key(tmp_path, data_dir, caplog, capsys, setting, key):
    if setting == "train.device=cuda":
        import torch

        if torch.cuda.is_available():
            pytest.skip("a GPU is visible: cuda is a valid device here")
    code, text = run(tmp_path, data_dir, setting, caplog=caplog, capsys=capsys)
    assert code == 2 and key in text
    assert "run.yaml" in text or key == "train.resume"
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(
    "yaml_text, check",
    [
        (
            "data: {train_csvs: null, val_csvs: null, train_fns: null, val_fns: null, data_dir: d}",
            lambda c: c.data.train_csvs == [] and c.data.val_fns == [],
        ),
        ("train:\ndata: {data_dir: d}", lambda c: c.train.epochs == 7),
        (
            "train: {lr: 1e-3, weight_decay: 1E+4}\ndata: {data_dir: d}",
            lambda c: c.train.lr == 1e-3 and c.train.weight_decay == 1e4,
        ),
    ],
)
def test_configs_users_write_are_accepted(tmp_path, yaml_text, check):
    path = tmp_path / "c.yaml"
    path.write_text(yaml_text)
    config = cfgmod.load(path, ["train.epochs=7"])
    assert check(config)


def test_yaml_float_strings_are_still_checked(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text("train: {lr: 1e-x}\ndata: {data_dir: d}")
    with pytest.raises(cfgmod.ConfigError, match="train.lr"):
        cfgmod.load(path)


# ---------------------------------------------------------------------------- first command on a fresh checkout


@pytest.mark.slow
def test_demo_config_generates_its_data_on_first_use(tmp_path, caplog, capsys):
    caplog.set_level(logging.INFO)
    argv = [
        "configs/demo.yaml",
        "--set",
        f"data.data_dir={tmp_path / 'demo'}",
        "--set",
        f"train.out_dir={tmp_path / 'run'}",
        "--set",
        "synthetic.shards=1",
        "--set",
        "synthetic.complexes_per_shard=3",
        "--set",
        "train.epochs=1",
        "--set",
        "train.max_steps_per_epoch=1",
        "--set",
        "train.progress=false",
        "--set",
        f"data.cache_dir={tmp_path / 'cache'}",
    ]
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        assert main_app.main(argv) == 0
        assert (tmp_path / "demo" / "index.csv").exists() and (tmp_path / "demo" / ".synthetic.json").exists()
        stamp = (tmp_path / "demo" / "shard_000.hdf5").stat().st_mtime_ns
        argv[argv.index("train.epochs=1")] = "train.epochs=2"
        assert main_app.main(argv) == 0  # second start reuses the data
    finally:
        os.chdir(cwd)
    assert (tmp_path / "demo" / "shard_000.hdf5").stat().st_mtime_ns == stamp
    assert "generating the synthetic data set" in caplog.text


# ---------------------------------------------------------------------------- cases that already worked


def test_unknown_key_exits_2(tmp_path, data_dir, caplog, capsys):
    code, text = run(tmp_path, data_dir, "data.batchsize=3", caplog=caplog, capsys=capsys)
    assert code == 2 and "data.batchsize" in text


def test_missing_data_dir_names_it(tmp_path, data_dir, caplog, capsys):
    code, text = run(tmp_path, data_dir, f"data.data_dir={tmp_path / 'nothing'}", caplog=caplog, capsys=capsys)
    assert code == 1 and "nothing" in text


def test_nan_coordinates_name_pose(tmp_path, data_dir, caplog, capsys):
    shard, pose = first_pose(data_dir)
    with h5py.File(shard, "a") as handle:
        set_atom_value(handle[pose], 1, 1, np.inf)
    code, text = run(tmp_path, data_dir, caplog=caplog, capsys=capsys)
    assert code == 1 and "pose c000/c000_pose0" in text and "NaN or infinite" in text
