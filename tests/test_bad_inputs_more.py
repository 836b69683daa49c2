"""The bad-input catalogue, part 2: the same data under two names, shards changed in place, impossible
geometry, absurd features, labels that contradict rmsd, ambiguous paths, duplicate YAML keys and an
interrupted first-use generation. Each case asserts the exit code and that the message names the file,
pose or key; the silently-wrong classes also assert how many samples actually trained."""

from __future__ import annotations

import json
import logging
import math
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import h5py
import numpy as np
import pandas as pd
import pytest

from pecan.config import DataConfig
from pecan.data import identity, packed
from pecan.data.index import split_by_complex
from pecan.data.loader import pack_params
from pecan.runtime.errors import DataError
from tests.procs import clean_env
from tests.shards import write_dataset
from tests.test_bad_inputs import ROOT, derive, edit_csv, first_pose, records, run

# 2 shards x 3 complexes x (3 poses + crystal); val_fraction 0.34 holds 2 of the 6 complexes out.
SAMPLES_PER_COMPLEX = 4
COMPLEXES = ["c000", "c001", "c002", "c100", "c101", "c102"]
TRAIN_COMPLEXES = set(split_by_complex(pd.DataFrame({"complex_id": COMPLEXES}), 0.34, 0)[0]["complex_id"])
CLEAN_TRAIN_SAMPLES = SAMPLES_PER_COMPLEX * len(TRAIN_COMPLEXES)


@pytest.fixture
def data_dir(tmp_path):
    """The data set of tests.test_bad_inputs: 2 shards x 3 complexes x (3 poses + crystal), index.csv."""
    directory = tmp_path / "data"
    write_dataset(directory, n_shards=2, n_complexes=3, n_poses=3)
    return directory


def rewrite_pose(data_dir: Path, change, dtype=None) -> None:
    """Replace the first pose's ``data`` with ``change(atoms)`` (a new dataset, optionally of another dtype)."""
    shard, pose = first_pose(data_dir)
    with h5py.File(shard, "a") as handle:
        atoms = handle[f"{pose}/data"][()].astype(dtype or np.float32)
        del handle[f"{pose}/data"]
        handle[f"{pose}/data"] = change(atoms)


def trained_without_first_pose() -> int:
    return CLEAN_TRAIN_SAMPLES - (1 if "c000" in TRAIN_COMPLEXES else 0)


# ---------------------------------------------------------------------------- one shard, two names


def test_symlink_matched_by_glob_is_an_error_naming_both(tmp_path, data_dir, caplog, capsys):
    os.symlink(data_dir / "shard_0.hdf5", data_dir / "shard_0_link.hdf5")
    code, text = run(tmp_path, data_dir, *derive(), caplog=caplog, capsys=capsys)
    assert code == 1, text
    assert "shard_0_link.hdf5" in text and "is the same file" in text and str(data_dir / "shard_0.hdf5") in text


@pytest.mark.parametrize("how", ["symlink", "cp -p"])
@pytest.mark.slow
def test_second_name_dropped_under_skip_and_trains_each_sample_once(tmp_path, data_dir, caplog, capsys, how):
    if how == "symlink":
        os.symlink(data_dir / "shard_0.hdf5", data_dir / "shard_9.hdf5")
    else:
        subprocess.run(["cp", "-p", str(data_dir / "shard_0.hdf5"), str(data_dir / "shard_9.hdf5")], check=True)
    code, text = run(tmp_path, data_dir, *derive("data.on_bad_sample=skip"), caplog=caplog, capsys=capsys)
    assert code == 0, text
    assert "dropping 1 duplicate shard name(s)" in text and "24 samples of 6 complexes" in text
    assert records(tmp_path)[0]["samples"] == CLEAN_TRAIN_SAMPLES  # 36 / 24 before: shard_0 counted twice


def test_cp_p_copy_is_an_error_naming_both(tmp_path, data_dir, caplog, capsys):
    subprocess.run(["cp", "-p", str(data_dir / "shard_1.hdf5"), str(data_dir / "copy.hdf5")], check=True)
    code, text = run(tmp_path, data_dir, *derive(), caplog=caplog, capsys=capsys)
    assert code == 1, text
    assert "is a byte-identical copy of shard" in text
    assert str(data_dir / "copy.hdf5") in text and str(data_dir / "shard_1.hdf5") in text


@pytest.mark.slow
def test_two_spellings_of_one_shard_in_a_csv(tmp_path, data_dir, caplog, capsys):
    os.symlink(data_dir, data_dir / "alias")  # alias/shard_0.hdf5 is shard_0.hdf5 under another path
    edit_csv(data_dir, lambda f: pd.concat([f, f[f["shard"] == "shard_0.hdf5"].assign(shard="alias/shard_0.hdf5")]))
    code, text = run(tmp_path, data_dir, caplog=caplog, capsys=capsys)
    assert code == 1, text
    assert str(data_dir / "alias" / "shard_0.hdf5") in text and "is the same file" in text
    code, text = run(tmp_path, data_dir, "data.on_bad_sample=skip", caplog=caplog, capsys=capsys)
    assert code == 0, text
    assert "24 samples of 6 complexes (12 bad row(s) dropped)" in text
    assert records(tmp_path)[0]["samples"] == CLEAN_TRAIN_SAMPLES


# ---------------------------------------------------------------------------- changed in place, size and mtime kept


def edit_in_place(shard: Path, change) -> None:
    """Change a shard's bytes without changing its size or mtime (as cp -p / rsync -t / a restore would)."""
    before = shard.stat()
    with h5py.File(shard, "r+") as handle:
        change(handle)
    os.utime(shard, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = shard.stat()
    assert (after.st_size, after.st_mtime_ns) == (before.st_size, before.st_mtime_ns)


@pytest.mark.slow
def test_pack_rebuilt_when_shard_edited_in_place_keeping_size_and_mtime(tmp_path, data_dir, caplog, capsys):
    shard, pose = first_pose(data_dir)
    code, text = run(tmp_path, data_dir, "train.max_steps_per_epoch=1", caplog=caplog, capsys=capsys)
    assert code == 0, text

    def move_ligand(handle):
        handle[f"{pose}/data"][0, 0] += 0.25  # in place: the dataset keeps its bytes' place and size

    edit_in_place(shard, move_ligand)
    with h5py.File(shard) as handle:
        edited_x = float(handle[f"{pose}/data"][0, 0])
    caplog.clear()
    code, text = run(
        tmp_path,
        data_dir,
        "train.max_steps_per_epoch=1",
        f"train.out_dir={tmp_path / 'run2'}",
        caplog=caplog,
        capsys=capsys,
    )
    assert code == 0, text
    assert "is stale" in text and "packing 1 of 2 shard(s)" in text
    pack = packed.find_valid_pack(shard, pack_params(DataConfig()), str(tmp_path / "cache"))
    header = packed.read_header(pack)
    assert header["source"]["blake2b"] == identity.content_hash(shard)
    first = header["keys"].index(["c000", "c000_pose0", 0])
    assert packed.map_pack(pack)["pos"][packed.map_pack(pack)["atom_offsets"][first], 0] == np.float32(edited_x)


@pytest.mark.slow
def test_derived_index_rederived_when_shard_edited_in_place(tmp_path, data_dir, caplog, capsys):
    shard, pose = first_pose(data_dir)
    code, text = run(tmp_path, data_dir, *derive("train.max_steps_per_epoch=1"), caplog=caplog, capsys=capsys)
    assert code == 0, text
    edit_in_place(shard, lambda handle: handle[pose].attrs.modify("score", -99.5))
    caplog.clear()
    code, text = run(
        tmp_path,
        data_dir,
        *derive("train.max_steps_per_epoch=1", f"train.out_dir={tmp_path / 'r2'}"),
        caplog=caplog,
        capsys=capsys,
    )
    assert code == 0, text
    assert "derived index" in text and "is stale" in text
    derived = pd.read_csv(data_dir / "pecan_all.csv", dtype={"poseid": str})
    assert derived.loc[derived["poseid"] == "c000_pose0", "score"].item() == -99.5


def test_stale_pack_where_nothing_is_writable_is_an_error_naming_the_shard(tmp_path, mounts, monkeypatch):
    from pecan.data import locations
    from pecan.data.packing import ensure_packed
    from tests.shards import write_shard

    (tmp_path / "data").mkdir()
    write_shard(tmp_path / "data" / "s.hdf5")
    shard = mounts.read_only(tmp_path / "data", tmp_path / "ro-data") / "s.hdf5"
    params = pack_params(DataConfig())
    [built] = ensure_packed([shard], params, str(tmp_path / "cache"))
    for name in ("cache", "xdg-cache", "tmp"):
        (tmp_path / name).mkdir(exist_ok=True)
        mounts.read_only(tmp_path / name, tmp_path / f"ro-{name}")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "ro-xdg-cache"))
    monkeypatch.setattr(locations.tempfile, "tempdir", str(tmp_path / "ro-tmp"))
    cache = str(tmp_path / "ro-cache")
    assert ensure_packed([shard], params, cache) == [tmp_path / "ro-cache" / built.name]  # valid: used read-only
    edit_in_place(
        tmp_path / "data" / "s.hdf5",
        lambda h: h["c000/pybel/processed/docking/c000_pose0/data"].write_direct(
            np.zeros((1, 22), np.float32) + 1, dest_sel=np.s_[0:1]
        ),
    )
    with pytest.raises(DataError, match=f"{shard}: .*packs"):
        ensure_packed([shard], params, cache)


# ---------------------------------------------------------------------------- geometry that cannot be a pose

GEOMETRY_CASES = {
    "nm": (lambda a: np.concatenate([a[:, :3] / 10, a[:, 3:]], axis=1), "coordinates look like nm"),
    "ligand 1000 A away": (
        lambda a: a + np.where(a[:, 16:17] > 0, 1000.0, 0.0) * np.eye(22)[0],
        "ligand has no receptor atom within 6 Å — different frames?",
    ),
    "no protein atoms": (lambda a: a[a[:, 16] > 0], "pose has 0 protein atoms"),
    "one point": (lambda a: np.concatenate([np.zeros_like(a[:, :3]), a[:, 3:]], axis=1), "degenerate geometry"),
    "absurd feature": (
        lambda a: np.concatenate([a[:, :15], np.full_like(a[:, 15:16], 3e38), a[:, 16:]], axis=1),
        "column 15 must lie in [-8, 8]",
    ),
}


@pytest.mark.parametrize("io_mode", ["packed", "handle_cache"])
@pytest.mark.parametrize("case", sorted(GEOMETRY_CASES))
def test_impossible_pose_is_an_error_naming_it(tmp_path, data_dir, caplog, capsys, case, io_mode):
    change, message = GEOMETRY_CASES[case]
    rewrite_pose(data_dir, change)
    code, text = run(tmp_path, data_dir, f"data.io_mode={io_mode}", caplog=caplog, capsys=capsys)
    assert code == 1, text
    assert "shard_0.hdf5, pose c000/c000_pose0" in text and message in text


@pytest.mark.parametrize("case", ["nm", "ligand 1000 A away"])
@pytest.mark.slow
def test_impossible_pose_dropped_and_counted_under_skip(tmp_path, data_dir, caplog, capsys, case):
    rewrite_pose(data_dir, GEOMETRY_CASES[case][0])
    code, text = run(tmp_path, data_dir, "data.on_bad_sample=skip", caplog=caplog, capsys=capsys)
    assert code == 0, text
    record = records(tmp_path)[0]
    assert record["skipped_at_start"] == 1 and record["samples"] == trained_without_first_pose()


def test_float64_that_overflows_float32_names_pose(tmp_path, data_dir, caplog, capsys):
    rewrite_pose(
        data_dir,
        lambda a: np.concatenate([a[:, :1] + np.eye(len(a))[0:1].T * 1e39, a[:, 1:]], axis=1),
        dtype=np.float64,
    )
    code, text = run(tmp_path, data_dir, caplog=caplog, capsys=capsys)
    assert code == 1 and "pose c000/c000_pose0" in text and "overflow float32" in text


def test_absurd_interaction_count_names_csv_line(tmp_path, data_dir, caplog, capsys):
    edit_csv(data_dir, lambda f: f.assign(num_hbonds=[3e38] + list(f["num_hbonds"][1:])))
    code, text = run(tmp_path, data_dir, caplog=caplog, capsys=capsys)
    assert code == 1 and "index.csv: line 2" in text and "num_hbonds must be a finite count" in text


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


# ---------------------------------------------------------------------------- labels with one meaning


@pytest.mark.slow
def test_label_contradicting_rmsd_is_an_error_or_a_counted_warning(tmp_path, data_dir, caplog, capsys):
    edit_csv(data_dir, lambda f: f.assign(label=[1] + list(f["label"][1:]), rmsd=[9.5] + list(f["rmsd"][1:])))
    code, text = run(tmp_path, data_dir, caplog=caplog, capsys=capsys)
    assert code == 1 and "index.csv: pose c000/c000_pose0" in text and "has label 1 but rmsd 9.5" in text
    assert "1 of 24 labelled rows contradict" in text
    code, text = run(
        tmp_path, data_dir, "data.label_conflict=warn", "train.max_steps_per_epoch=1", caplog=caplog, capsys=capsys
    )
    assert code == 0 and "training on the stored labels" in text


@pytest.mark.slow
def test_rmsd_threshold_takes_effect_under_label_source_rmsd(tmp_path, data_dir, caplog, capsys):
    # Every docked pose has rmsd < 6 (tests.shards): threshold 7 makes them all positive, i.e. one class.
    code, text = run(tmp_path, data_dir, "data.rmsd_threshold=7.0", caplog=caplog, capsys=capsys)
    assert code == 1 and "contradict their rmsd" in text  # auto: stored labels disagree at 7 A
    code, text = run(
        tmp_path, data_dir, "data.rmsd_threshold=7.0", "data.label_source=rmsd", caplog=caplog, capsys=capsys
    )
    assert code == 1 and "single-class training set" in text and "data.allow_single_class" in text
    code, text = run(
        tmp_path,
        data_dir,
        "data.rmsd_threshold=7.0",
        "data.label_source=rmsd",
        "data.allow_single_class=true",
        "train.max_steps_per_epoch=1",
        caplog=caplog,
        capsys=capsys,
    )
    assert code == 0, text


def test_is_crystal_other_than_0_1_names_line(tmp_path, data_dir, caplog, capsys):
    edit_csv(data_dir, lambda f: f.assign(is_crystal=[0.5] + list(f["is_crystal"][1:])))
    code, text = run(tmp_path, data_dir, "data.use_crystal=false", caplog=caplog, capsys=capsys)
    assert code == 1 and "index.csv: line 2" in text and "is_crystal must be 0 or 1 (got 0.5)" in text


# ---------------------------------------------------------------------------- which file was read


def test_csv_in_working_directory_that_differs_is_an_error_naming_both(tmp_path, data_dir, caplog, capsys, monkeypatch):
    elsewhere = tmp_path / "other_set"
    elsewhere.mkdir()
    pd.read_csv(data_dir / "index.csv").iloc[:8].to_csv(elsewhere / "index.csv", index=False)
    monkeypatch.chdir(elsewhere)
    code, text = run(tmp_path, data_dir, caplog=caplog, capsys=capsys)
    assert code == 1 and "is ambiguous" in text
    assert str(data_dir / "index.csv") in text and str(elsewhere / "index.csv") in text
    (elsewhere / "index.csv").unlink()
    code, text = run(tmp_path, data_dir, "train.max_steps_per_epoch=1", caplog=caplog, capsys=capsys)
    assert code == 0 and f"reading index CSV {data_dir / 'index.csv'}" in text and f"shards from {data_dir}" in text


# ---------------------------------------------------------------------------- strict YAML


@pytest.mark.parametrize(
    "extra, key, lines",
    [
        # write_config writes data, model and train on lines 1-3: the extra line is line 4
        ("data: {val_fraction: 0.5}\n", "data", "line 1 and line 4"),
        ("trace: {enabled: false, dir: t, enabled: true}\n", "enabled", "line 4 and line 4"),
    ],
)
def test_duplicate_yaml_key_exits_2_naming_key_and_lines(tmp_path, data_dir, caplog, capsys, extra, key, lines):
    code, text = run(tmp_path, data_dir, caplog=caplog, capsys=capsys, extra=extra)
    assert code == 2 and f"key '{key}' appears twice" in text and lines in text and "run.yaml" in text


def test_duplicate_key_in_block_style_names_both_lines(tmp_path):
    from pecan import config

    path = tmp_path / "c.yaml"
    path.write_text(
        textwrap.dedent("""\
        train:
          lr: 0.01
          epochs: 2
          lr: 0.5
        """)
    )
    with pytest.raises(config.ConfigError, match=r"key 'lr' appears twice in one mapping, at line 2 and line 4"):
        config.load(path)


# ---------------------------------------------------------------------------- interrupted first-use generation

GENERATE = (
    "import sys; from pecan.synthetic.cache import ensure_dataset; ensure_dataset(sys.argv[1], n_shards=8, "
    "complexes_per_shard=3, seed=0, rmsd_threshold=2.0, index_name='index.csv', progress=False)"
)


@pytest.mark.slow
def test_generation_killed_midway_is_redone_never_trained_on(tmp_path, caplog):
    from pecan import config as cfgmod
    from pecan.synthetic.cache import ensure_from_config

    out = tmp_path / "demo"
    child = subprocess.Popen([sys.executable, "-c", GENERATE, str(out)], cwd=ROOT, env=clean_env())
    deadline = time.monotonic() + 300
    while not list(out.glob(".synthetic-tmp-*/shard_001.hdf5")) and child.poll() is None:
        assert time.monotonic() < deadline
        time.sleep(0.02)
    os.kill(child.pid, signal.SIGKILL)
    assert child.wait() == -signal.SIGKILL
    assert not list(out.glob("*.hdf5")) and not (out / "index.csv").exists()  # nothing half-made in place
    caplog.set_level(logging.INFO)
    cfg = cfgmod.from_dict(
        {
            "data": {"data_dir": str(out), "train_csvs": ["index.csv"]},
            "synthetic": {"enabled": True, "shards": 8, "complexes_per_shard": 3},
            "train": {"progress": False},
        }
    )
    ensure_from_config(cfg)
    assert "removing" in caplog.text and "interrupted generation" in caplog.text
    assert sorted(p.name for p in out.glob("*.hdf5")) == [f"shard_{i:03d}.hdf5" for i in range(8)]
    assert pd.read_csv(out / "index.csv")["pdbid"].nunique() == 24
    assert json.loads((out / ".synthetic.json").read_text())["shards"][-1] == "shard_007.hdf5"
    assert not list(out.glob(".synthetic-tmp-*")) and not (out / ".synthetic.pending.json").exists()


def test_generation_killed_while_moving_files_into_place_is_redone(tmp_path, caplog, monkeypatch):
    from pecan import config as cfgmod
    from pecan.synthetic import cache

    cfg = cfgmod.from_dict(
        {
            "data": {"data_dir": str(tmp_path / "d"), "train_csvs": ["index.csv"]},
            "synthetic": {"enabled": True, "shards": 2, "complexes_per_shard": 2},
            "train": {"progress": False},
        }
    )
    real_replace, moved = os.replace, []

    def die_after_first(src, dst):
        into_place = cache.TEMP_PREFIX in str(src) and cache.TEMP_PREFIX not in str(dst)
        if into_place and moved:
            raise KeyboardInterrupt("killed while moving files into place")
        if into_place:
            moved.append(dst)
        real_replace(src, dst)

    monkeypatch.setattr(cache.os, "replace", die_after_first)
    with pytest.raises(KeyboardInterrupt):
        cache.ensure_from_config(cfg)
    monkeypatch.setattr(cache.os, "replace", real_replace)
    assert (tmp_path / "d" / "shard_000.hdf5").exists() and (tmp_path / "d" / cache.PENDING_NAME).exists()
    caplog.set_level(logging.INFO)
    cache.ensure_from_config(cfg)  # not taken for foreign data: the pending marker says whose it is
    assert "interrupted generation" in caplog.text and (tmp_path / "d" / "index.csv").exists()
    assert not (tmp_path / "d" / cache.PENDING_NAME).exists() and (tmp_path / "d" / ".synthetic.json").exists()
