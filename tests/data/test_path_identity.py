"""A shard path names the file the OS opens: ``lnk/../shard_000.hdf5`` with ``lnk`` a symlink is the shard beside
lnk's target, not the one beside lnk (a path normalised as text would name that other file)."""

from __future__ import annotations

import os
from pathlib import Path

import h5py
import pandas as pd
import pytest

from pecan.data import index as idx
from pecan.data import layout, locations
from tests.shards import write_dataset

COMMON = dict(
    pose_group=layout.DEFAULT_POSE_GROUP,
    crystal_group=layout.DEFAULT_CRYSTAL_GROUP,
    use_crystal=True,
    rmsd_threshold=2.0,
    index_prefix="pecan",
)


@pytest.fixture
def linked(tmp_path) -> tuple[Path, Path, Path]:
    """(data dir, its own shard_0.hdf5, the other shard_0.hdf5 that data/lnk/../shard_0.hdf5 opens): data/lnk is
    a symlink to elsewhere/sub; the two shards hold different complexes."""
    data, elsewhere = tmp_path / "data", tmp_path / "elsewhere"
    write_dataset(data, n_shards=1, n_complexes=1, n_poses=2, prefix="here")
    write_dataset(elsewhere, n_shards=1, n_complexes=1, n_poses=2, prefix="there")
    (elsewhere / "sub").mkdir()
    (data / "lnk").symlink_to(elsewhere / "sub")
    return data, data / "shard_0.hdf5", elsewhere / "shard_0.hdf5"


def opened_by_os(path: Path) -> tuple[int, int]:
    stat = os.stat(path)
    return stat.st_dev, stat.st_ino


def test_absolute_names_the_file_the_os_opens(linked):
    data, _, other = linked
    spelled = data / "lnk" / ".." / "shard_0.hdf5"
    assert opened_by_os(locations.absolute(spelled)) == opened_by_os(spelled) == opened_by_os(other)
    assert locations.absolute(data / "." / "lnk" / "x.hdf5") == data / "lnk" / "x.hdf5"  # links elsewhere kept


def test_index_csv_row_through_a_symlink_reads_the_shard_the_os_opens(linked):
    data, _, other = linked
    rows = pd.read_csv(other.parent / "index.csv").assign(shard="lnk/../shard_0.hdf5")
    rows.to_csv(data / "linked.csv", index=False)
    index = idx.build_index(["linked.csv"], [], str(data), **COMMON)
    assert {opened_by_os(Path(s)) for s in index["shard"]} == {opened_by_os(other)}
    with h5py.File(index["shard"].iloc[0], "r") as handle:
        assert all(c in handle for c in index["complex_id"])


def test_the_same_name_through_a_symlink_and_beside_it_are_two_shards(linked):
    data, _, other = linked
    here = pd.read_csv(data / "index.csv")
    there = pd.read_csv(other.parent / "index.csv").assign(shard="lnk/../shard_0.hdf5")
    pd.concat([here, there]).to_csv(data / "both.csv", index=False)
    index = idx.build_index(["both.csv"], [], str(data), **COMMON)
    assert len(index) == len(here) + len(there) and index["shard"].nunique() == 2


def test_shard_list_through_a_symlink_names_the_shard_the_os_opens(linked):
    data, _, other = linked
    shards = idx.resolve_shards(["lnk/../shard_0.hdf5"], str(data))
    assert [opened_by_os(s) for s in shards] == [opened_by_os(other)]
