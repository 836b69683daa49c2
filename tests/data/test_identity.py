"""Shard identity by content: same file under two names, byte copies, and fingerprints that see in-place edits."""

from __future__ import annotations

import os
import subprocess

import pytest

from pecan.data import identity
from pecan.runtime.errors import DataError


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
