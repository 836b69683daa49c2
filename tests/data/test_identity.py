"""Shard identity by content: same file under two names, byte copies, and fingerprints that see in-place edits;
in a run, the same shard under two names or spellings trains once, and a pack or derived index of a shard
edited in place (size and mtime kept) is rebuilt."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import h5py
import numpy as np
import pandas as pd
import pytest

from pecan.config import DataConfig
from pecan.data import identity, packed
from pecan.data.loader import pack_params
from pecan.runtime.errors import DataError
from tests.app_run import CLEAN_TRAIN_SAMPLES, derive, edit_csv, first_pose, records, run


def write(path, data: bytes):
    path.write_bytes(data)
    return path


def test_hard_link_symlink_and_copy_are_duplicates_equal_size_other_bytes_are_not(tmp_path):
    a = write(tmp_path / "a.hdf5", b"x" * 1000)
    os.link(a, tmp_path / "hard.hdf5")
    os.symlink(a, tmp_path / "soft.hdf5")
    subprocess.run(["cp", "-p", str(a), str(tmp_path / "copy.hdf5")], check=True)
    other = write(tmp_path / "other.hdf5", b"y" * 1000)  # same size, other bytes: a different shard
    shards = [a, tmp_path / "hard.hdf5", tmp_path / "soft.hdf5", tmp_path / "copy.hdf5", other]
    found = {(first.name, later.name): why for first, later, why in identity.find_duplicates(shards)}
    assert found.keys() == {("a.hdf5", "hard.hdf5"), ("a.hdf5", "soft.hdf5"), ("a.hdf5", "copy.hdf5")}
    assert found[("a.hdf5", "copy.hdf5")] == "a byte-identical copy"
    assert found[("a.hdf5", "soft.hdf5")].startswith("the same file")
    with pytest.raises(DataError, match=r"hard.hdf5 is the same file .* of shard .*a.hdf5.*\(3 such shard"):
        identity.distinct_shards(shards, "error", "train_fns")
    assert identity.distinct_shards(shards, "skip", "train_fns") == [a, other]


def test_fingerprint_sees_an_edit_that_keeps_size_and_mtime(tmp_path):
    shard = write(tmp_path / "s.hdf5", bytes(range(256)) * 100)
    recorded = identity.fingerprint(shard)
    assert identity.still_matches(shard, recorded)
    before = shard.stat()
    with open(shard, "r+b") as handle:  # one byte in the middle: neither end, size nor mtime changes
        handle.seek(12_345)
        handle.write(b"\xff")
    os.utime(shard, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert (shard.stat().st_size, shard.stat().st_mtime_ns) == (before.st_size, before.st_mtime_ns)
    assert not identity.still_matches(shard, recorded)


def test_a_touch_alone_rehashes_and_still_matches(tmp_path):
    shard = write(tmp_path / "s.hdf5", b"abc" * 10)
    recorded = identity.fingerprint(shard)
    os.utime(shard, ns=(1, 2))  # stat record differs; the bytes do not
    assert identity.stat_record(shard)["mtime_ns"] != recorded["mtime_ns"]
    assert identity.still_matches(shard, recorded)
    assert not identity.still_matches(shard, {"size": 30})  # an old-style record without a hash


def test_a_rehash_that_matches_is_noted_so_the_next_check_reads_nothing(tmp_path, monkeypatch):
    shard = write(tmp_path / "s.hdf5", b"abc" * 10)
    recorded = identity.fingerprint(shard)
    os.chmod(shard, 0o600)  # ctime moves, the bytes do not
    confirmed = identity.confirmed_path(tmp_path / "s.pecanpack")
    assert identity.still_matches(shard, recorded, confirmed) and confirmed.exists()

    def no_reading(path):
        raise AssertionError("hashed again")

    monkeypatch.setattr(identity, "content_hash", no_reading)
    assert identity.still_matches(shard, recorded, confirmed)
    with pytest.raises(AssertionError, match="hashed again"):  # without the note it must read
        identity.still_matches(shard, recorded)


def test_a_byte_copy_is_found_among_two_shards(tmp_path):
    """Two shards, one a copy of the other: the smallest case (a size group of two) is hashed too."""
    a = write(tmp_path / "a.hdf5", b"x" * 1000)
    subprocess.run(["cp", str(a), str(tmp_path / "b.hdf5")], check=True)
    found = identity.find_duplicates([a, tmp_path / "b.hdf5"])
    assert [(first.name, later.name, why) for first, later, why in found] == [
        ("a.hdf5", "b.hdf5", "a byte-identical copy")
    ]
    assert identity.find_duplicates([a, write(tmp_path / "c.hdf5", b"x" * 999)]) == []  # another size: no hash needed


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


def test_forget_hashes_makes_the_next_fingerprint_read_the_file_again(tmp_path, monkeypatch):
    path = write(tmp_path / "a.hdf5", b"pecan" * 100)
    hashed = []
    blake2b = identity.hashlib.blake2b
    monkeypatch.setattr(identity.hashlib, "blake2b", lambda **kw: hashed.append(1) or blake2b(**kw))
    identity.forget_hashes()
    first = identity.content_hash(path)
    assert identity.content_hash(path) == first and len(hashed) == 1  # memoised: read once
    identity.forget_hashes()
    assert identity.content_hash(path) == first and len(hashed) == 2  # read again
