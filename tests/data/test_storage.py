"""Shared storage: read-only data for real, the location chain, rank agreement, umask, staging, sync_dir."""

from __future__ import annotations

import errno
import importlib.util
import json
import logging
import os
import stat
from pathlib import Path
from typing import Optional

import pytest

import main_app
from pecan import config as cfgmod
from pecan import report
from pecan.data import index as idx
from pecan.data import packed, packing, staging
from pecan.data.loader import pack_params
from pecan.runtime import fileio
from pecan.train.sync import OutputSync
from tests import configs
from tests.configs import SMALL_MODEL
from tests.ddp import run_ranks_ok
from tests.procs import ROOT, app_argv
from tests.shards import write_dataset


def write_config(tmp_path: Path, shard_glob: str, settings: Optional[dict] = None, epochs: int = 1) -> Path:
    """A tiny run over shard files (no index CSV, no cache_dir): the index and packs are derived, so they have
    to be written somewhere."""
    data = {"train_fns": [shard_glob], "val_fraction": 0.25, "batch_size": 4, "num_workers": 0}
    train = {"epochs": epochs, "out_dir": str(tmp_path / "run"), "progress": False}
    settings = {"data": data, "model": SMALL_MODEL, "train": train, **(settings or {})}
    return configs.write_config(tmp_path, settings, dataset={})


@pytest.fixture
def shards(tmp_path):
    """Two small shards in tmp_path/data (an index.csv beside them is ignored: runs use train_fns)."""
    paths, _ = write_dataset(tmp_path / "data", n_shards=2, n_complexes=4, n_poses=3)
    return tmp_path / "data", paths


def two_ranks(config: Path, *overrides: str) -> str:
    """Both ranks' output of a 2-rank run of ``config`` (tests/ddp.py)."""
    return run_ranks_ok(app_argv(config, *overrides))


# ---------------------------------------------------------------------------- the atomic writer


def test_atomic_write_mode_follows_umask(tmp_path, monkeypatch):
    for mask, expected in ((0o022, 0o644), (0o077, 0o600), (0o002, 0o664)):
        monkeypatch.setattr(fileio, "_UMASK", mask)
        path = fileio.write_text(tmp_path / f"f{mask:o}", "x")
        assert stat.S_IMODE(path.stat().st_mode) == expected


def test_umask_is_read_without_changing_it():
    previous = os.umask(0o027)
    try:
        assert fileio._read_umask() == 0o027
        assert os.umask(0o027) == 0o027
    finally:
        os.umask(previous)


def test_failed_write_leaves_nothing_and_keeps_the_old_file(tmp_path):
    target = tmp_path / "a.txt"
    target.write_text("old")
    with pytest.raises(RuntimeError):
        with fileio.atomic_write(target, "w") as out:
            out.write("new")
            raise RuntimeError("writer failed")
    assert target.read_text() == "old" and os.listdir(tmp_path) == ["a.txt"]


def test_disk_full_names_path_and_leaves_no_temp(tmp_path, mounts):
    full = mounts.tmpfs(tmp_path / "tiny", size="64k")
    with pytest.raises(fileio.StorageError) as caught, fileio.atomic_write(full / "big.bin", "wb") as out:
        out.write(b"\0" * 256 * 1024)
    assert caught.value.errno == errno.ENOSPC
    assert "disk full" in str(caught.value) and str(full / "big.bin") in str(caught.value)
    assert os.listdir(full) == []


# ---------------------------------------------------------------------------- environment


def test_env_vars_read_once_in_config(tmp_path, monkeypatch):
    monkeypatch.setenv("PECAN_DECODE_CACHE", "maybe")
    with pytest.raises(cfgmod.ConfigError, match="PECAN_DECODE_CACHE"):
        cfgmod.load(None, ["data.data_dir=/x"])
    monkeypatch.setenv("PECAN_DECODE_CACHE", "off")
    monkeypatch.setenv("PECAN_CACHE_DIR", str(tmp_path / "packs"))
    monkeypatch.setenv("PECAN_INDEX_CSV_DIR", str(tmp_path / "idx"))
    config = cfgmod.load(None, ["data.data_dir=/x", "data.index_dir=/explicit"])
    assert config.data.decode_cache is False and config.data.cache_dir == str(tmp_path / "packs")
    assert config.data.index_dir == "/explicit"  # the config key wins over the variable


# ---------------------------------------------------------------------------- read-only data, for real


@pytest.mark.slow
def test_train_from_read_only_data_uses_user_cache_and_reuses_it(tmp_path, shards, mounts, caplog):
    data_dir, paths = shards
    ro = mounts.read_only(data_dir, tmp_path / "ro")
    config = write_config(tmp_path, f"{ro}/*.hdf5")
    caplog.set_level(logging.INFO)
    assert main_app.main([str(config)]) == 0
    user_cache = tmp_path / "xdg-cache" / "pecan"
    packs = sorted((user_cache / "packs").glob("*.pecanpack"))
    csvs = list((user_cache / "index").glob("*/pecan_all.csv"))
    assert len(packs) == 2 and len(csvs) == 1
    log = caplog.text
    assert "read-only file system" in log and f"packs go to {user_cache / 'packs'} (per-user cache)" in log
    assert f"derived index CSVs go to {csvs[0].parent} (per-user cache)" in log
    stamps = [p.stat().st_mtime_ns for p in packs + csvs]
    caplog.clear()
    (tmp_path / "run" / "checkpoints" / "last.pt").unlink()  # a fresh run, not a resume
    assert main_app.main([str(config)]) == 0
    assert "reusing the derived index" in caplog.text and "packing" not in caplog.text
    assert [p.stat().st_mtime_ns for p in packs + csvs] == stamps


def test_pack_shards_script_on_read_only_data(tmp_path, shards, mounts, capsys):
    data_dir, _ = shards
    ro = mounts.read_only(data_dir, tmp_path / "ro")
    spec = importlib.util.spec_from_file_location("pack_shards", ROOT / "scripts" / "pack_shards.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    assert script.main([str(write_config(tmp_path, f"{ro}/*.hdf5")), "--processes", "1"]) == 0
    assert len(list((tmp_path / "xdg-cache" / "pecan" / "packs").glob("*.pecanpack"))) == 2
    assert "2 pack(s) ready" in capsys.readouterr().out


def test_valid_pack_in_read_only_shared_cache_is_used(tmp_path, shards, mounts):
    data_dir, paths = shards
    config = cfgmod.load(write_config(tmp_path, f"{data_dir}/*.hdf5"))
    params = pack_params(config.data)
    built = packing.pack_shard(paths[0], params, str(tmp_path / "team"))
    shared = mounts.read_only(tmp_path / "team", tmp_path / "team-ro")
    found = packed.find_valid_pack(paths[0], params, str(shared))
    assert found == shared / built.name


def test_symlinked_shards_keep_derived_files_beside_the_link(tmp_path, shards):
    data_dir, paths = shards
    links = tmp_path / "links"
    links.mkdir()
    for path in paths:
        (links / path.name).symlink_to(path)
    config = cfgmod.load(write_config(tmp_path, f"{links}/*.hdf5"))
    frame = idx.build_index(
        [],
        config.data.train_fns,
        "",
        pose_group=config.data.pose_group,
        crystal_group=config.data.crystal_group,
        use_crystal=True,
        rmsd_threshold=2.0,
        index_prefix="pecan",
    )
    assert set(frame["shard"]) == {str(links / p.name) for p in paths}
    assert (links / "pecan_all.csv").exists() and not (data_dir / "pecan_all.csv").exists()
    pack = packing.pack_shard(links / paths[0].name, pack_params(config.data))
    assert pack.parent == links / ".pecan_cache"


# ---------------------------------------------------------------------------- created files follow the umask


@pytest.mark.slow
@pytest.mark.parametrize("mask, expected", [(0o022, 0o644), (0o077, 0o600)])
def test_created_files_follow_umask(tmp_path, shards, mask, expected, monkeypatch):
    data_dir, _ = shards
    monkeypatch.setattr(fileio, "_UMASK", None)  # read once per process: this run's start reads it again
    config = write_config(tmp_path, f"{data_dir}/*.hdf5")
    previous = os.umask(mask)  # in this process (one test at a time per worker): the run creates its files here
    try:
        assert main_app.main([str(config)]) == 0
    finally:
        os.umask(previous)
    run = tmp_path / "run"
    created = [
        *(data_dir / ".pecan_cache").glob("*.pecanpack"),
        data_dir / "pecan_all.csv",
        run / "epochs.jsonl",
        run / "runs.jsonl",
        run / "config.yaml",
        run / "checkpoints" / "last.pt",
    ]
    assert len(created) == 7
    modes = {str(p): oct(stat.S_IMODE(p.stat().st_mode)) for p in created}
    assert set(modes.values()) == {oct(expected)}, modes


# ---------------------------------------------------------------------------- ranks agree


@pytest.mark.slow
@pytest.mark.multiprocess
def test_two_ranks_use_the_pack_rank0_built_past_a_foreign_one(tmp_path, shards, mounts):
    data_dir, paths = shards
    config = write_config(tmp_path, f"{data_dir}/*.hdf5")
    params = pack_params(cfgmod.load(config).data)
    # The first candidate (beside the shards) holds foreign, unreadable-as-pack files and cannot be written.
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    for path in paths:
        (foreign / packed.pack_name(path, params)).write_bytes(b"not a pack, written by someone else")
    mounts.read_only(foreign, data_dir / ".pecan_cache")
    out = two_ranks(config)
    packs = sorted((tmp_path / "xdg-cache" / "pecan" / "packs").glob("*.pecanpack"))
    assert len(packs) == 2 and all(packed.read_header(p)["version"] == packed.PACK_VERSION for p in packs)
    assert "per-user cache" in out
    assert len(report.read_records(tmp_path / "run" / "epochs.jsonl")) == 1


# ---------------------------------------------------------------------------- staging


def test_stage_copies_reuses_and_falls_back(tmp_path, shards, mounts, monkeypatch):
    _, paths = shards
    first = staging.stage(paths, tmp_path / "stage")
    assert first.files_copied == 2 and first.fallback is None
    assert all(Path(first.mapping[str(p)]).read_bytes() == p.read_bytes() for p in paths)
    again = staging.stage(paths, tmp_path / "stage")
    assert again.files_copied == 0 and again.files_reused == 2 and again.bytes_copied == 0
    # A disk that fills up mid-copy: everything is read in place, no temp file is left behind.
    small = mounts.tmpfs(tmp_path / "small", size=f"{paths[0].stat().st_size // 1024 + 8}k")
    monkeypatch.setattr(staging, "_check_space", lambda *a: None)
    full = staging.stage(paths, small)
    assert full.fallback and "disk full" in full.fallback
    assert full.mapping == {str(p): str(p) for p in paths}
    assert not [n for n in os.listdir(small) if n.endswith(".tmp")]


def test_full_stage_dir_falls_back_and_run_completes(tmp_path, shards, mounts, caplog):
    data_dir, _ = shards
    full = mounts.tmpfs(tmp_path / "stage", size="64k")
    (full / "filler").write_bytes(b"\0" * 60 * 1024)
    config = write_config(tmp_path, f"{data_dir}/*.hdf5", {"data.stage_dir": str(full)})
    caplog.set_level(logging.INFO)
    assert main_app.main([str(config)]) == 0
    record = report.read_records(tmp_path / "run" / "epochs.jsonl")[0]
    assert "disk full" in record["staging_fallback"] and record["staging_bytes"] == 0
    assert "reading every file in place" in caplog.text


@pytest.mark.slow
@pytest.mark.multiprocess
def test_two_ranks_stage_once_per_node_and_reuse(tmp_path, shards):
    data_dir, _ = shards
    stage_dir = tmp_path / "stage"
    config = write_config(tmp_path, f"{data_dir}/*.hdf5", {"data.stage_dir": str(stage_dir)})
    out = two_ranks(config)
    first = report.read_records(tmp_path / "run" / "epochs.jsonl")[0]
    staged = sorted(stage_dir.glob("*.pecanpack"))
    assert len(staged) == 2 and first["staging_files_copied"] == 2 and first["staging_files_reused"] == 0
    assert first["staging_bytes"] == sum(p.stat().st_size for p in staged) and first["staging_fallback"] is None
    assert out.count("staged 2 file(s)") == 1
    stamps = [p.stat().st_mtime_ns for p in staged]
    (tmp_path / "run" / "epochs.jsonl").unlink()
    # A later run on the node (here one rank, in this process) finds the staged copies and copies nothing.
    assert main_app.main([str(config), "--set", "train.resume=never"]) == 0
    second = report.read_records(tmp_path / "run" / "epochs.jsonl")[0]
    assert second["staging_files_copied"] == 0 and second["staging_files_reused"] == 2
    assert second["staging_bytes"] == 0 and [p.stat().st_mtime_ns for p in staged] == stamps


# ---------------------------------------------------------------------------- sync_dir


def test_output_sync_copies_changed_files_atomically(tmp_path):
    out, shared = tmp_path / "local", tmp_path / "shared"
    (out / "checkpoints").mkdir(parents=True)
    (out / "checkpoints" / "last.pt").write_bytes(b"v1")
    (out / ".epochs.jsonl.abc.tmp").write_text("half")
    sync = OutputSync(out, shared, minutes=60).start()
    assert sync.sync() == 1 and (shared / "checkpoints" / "last.pt").read_bytes() == b"v1"
    assert not (shared / ".epochs.jsonl.abc.tmp").exists()
    assert sync.sync() == 0
    (out / "epochs.jsonl").write_text("{}\n")
    assert sync.close() == 1 and (shared / "epochs.jsonl").read_text() == "{}\n"


def test_sync_dir_mirrors_the_run_at_exit(tmp_path, shards):
    data_dir, _ = shards
    config = write_config(tmp_path, f"{data_dir}/*.hdf5", {"train.sync_dir": str(tmp_path / "shared")})
    assert main_app.main([str(config)]) == 0
    for name in ("epochs.jsonl", "runs.jsonl", "config.yaml", "checkpoints/last.pt"):
        assert (tmp_path / "shared" / name).read_bytes() == (tmp_path / "run" / name).read_bytes(), name
    assert json.loads((tmp_path / "shared" / "epochs.jsonl").read_text().splitlines()[0])["epoch"] == 1
