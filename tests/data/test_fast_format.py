"""LLNL FAST's own files train unchanged: shards as FAST's writer writes them (no rmsd, label, score or interaction
attribute) with FAST's label CSV (shard, pdbid, poseid, label, rmsd, score: no is_crystal, no counts). A CSV that
lacks counts its shards do carry stays an error."""

from __future__ import annotations

import logging

import h5py
import numpy as np
import pandas as pd
import pytest

import main_app
from pecan.data import index as idx
from pecan.data import layout
from pecan.runtime.errors import DataError
from tests.configs import write_config
from tests.fast_shards import FAST_CSV_COLUMNS, write_fast_dataset
from tests.shards import write_dataset, write_shard

NO_COUNTS = "carry no interaction counts"


def test_the_helper_writes_what_fast_writes(tmp_path):
    shards, csv = write_fast_dataset(tmp_path, n_shards=1, n_complexes=1, n_poses=2)
    with h5py.File(shards[0], "r") as handle:
        complex_group = handle["0f00"]
        assert dict(complex_group.attrs) == {"affinity": 0.0}
        assert sorted(complex_group[layout.DEFAULT_POSE_GROUP]) == ["1", "2"]
        for group in (complex_group[f"{layout.DEFAULT_POSE_GROUP}/1"], complex_group[layout.DEFAULT_CRYSTAL_GROUP]):
            data = group["data"]
            assert data.dtype == np.float32 and data.compression == "lzf"
            assert list(group.attrs) == ["van_der_waals"] and group.attrs["van_der_waals"].shape == (len(data),)
    assert pd.read_csv(csv).columns.tolist() == FAST_CSV_COLUMNS


@pytest.mark.parametrize("io_mode", ["packed", "handle_cache"])
def test_fast_shards_with_fast_labels_train_one_epoch(tmp_path, caplog, io_mode):
    write_fast_dataset(tmp_path / "data")
    caplog.set_level(logging.INFO)
    path = write_config(
        tmp_path,
        {"data.train_csvs": ["labels.csv"], "data.io_mode": io_mode, "model": {"hidden": 8, "layers": 1, "rbf": 4}},
        dataset={},
    )
    assert main_app.main([str(path), "--set", "train.epochs=1"]) == 0
    assert (tmp_path / "run" / "checkpoints" / "last.pt").exists()
    said = [r.getMessage() for r in caplog.records if NO_COUNTS in r.getMessage()]
    assert len(said) == 1 and "labels.csv" in said[0] and "counts are 0" in said[0]


def test_fast_labels_read_as_docked_poses_with_zero_counts(tmp_path):
    _, csv = write_fast_dataset(tmp_path, n_shards=1, n_complexes=2, n_poses=3)
    index = idx.read_index_csv(csv, str(tmp_path), 2.0)
    assert len(index) == 6 and (index["is_crystal"] == 0).all()
    assert (index[list(layout.INTERACTION_ATTRS)] == 0).all().all()
    assert index["label"].tolist() == pd.read_csv(csv)["label"].tolist()


def test_a_csv_without_the_counts_its_shards_carry_is_an_error(tmp_path):
    _, csv = write_dataset(tmp_path, n_shards=1, n_complexes=2, n_poses=2)
    pd.read_csv(csv).drop(columns=list(layout.INTERACTION_ATTRS)).to_csv(csv, index=False)
    with pytest.raises(DataError, match=r"index.csv has no interaction-count columns, but its shard .*shard_0.hdf5 "):
        idx.read_index_csv(csv, str(tmp_path), 2.0)


def test_one_shard_carrying_counts_among_shards_without_is_an_error(tmp_path):
    shards, csv = write_fast_dataset(tmp_path, n_shards=2, n_complexes=1, n_poses=2)
    with h5py.File(shards[1], "a") as handle:
        handle[f"1f00/{layout.DEFAULT_POSE_GROUP}/1"].attrs["hpbond"] = 3.0
    with pytest.raises(DataError, match=r"shard_001.hdf5 carries them \(pose 1f00/1 has hpbond\)"):
        idx.read_index_csv(csv, str(tmp_path), 2.0)


def test_some_counts_but_not_all_is_an_error_naming_the_rest(tmp_path):
    _, csv = write_fast_dataset(tmp_path, n_shards=1, n_complexes=1, n_poses=2)
    pd.read_csv(csv).assign(num_hbonds=1, pbond=0).to_csv(csv, index=False)
    with pytest.raises(DataError, match=r"labels.csv: missing required column\(s\) hpbond, habond, sbond \("):
        idx.read_index_csv(csv, str(tmp_path), 2.0)


def test_no_is_crystal_but_a_crystal_row_is_an_error_naming_the_line(tmp_path):
    _, csv = write_dataset(tmp_path, n_shards=1, n_complexes=1, n_poses=2)
    pd.read_csv(csv).drop(columns=["is_crystal"]).to_csv(csv, index=False)
    with pytest.raises(DataError, match=r"missing required column\(s\) is_crystal: line 4 names pose c000/pdbbind"):
        idx.read_index_csv(csv, str(tmp_path), 2.0)


def test_derived_index_of_shards_without_counts_says_so_once(tmp_path, caplog):
    path = tmp_path / "s.hdf5"
    write_shard(path, n_complexes=2, n_poses=2)

    def drop_counts(_, item) -> None:  # visititems stops at the first callback that returns a value
        for name in layout.INTERACTION_ATTRS:
            item.attrs.pop(name, None)

    with h5py.File(path, "a") as handle:
        handle.visititems(drop_counts)
    caplog.set_level(logging.INFO)
    frame = idx.derive_index(
        [path], idx.IndexSettings(layout.DEFAULT_POSE_GROUP, layout.DEFAULT_CRYSTAL_GROUP, True, 2.0)
    )
    assert (frame[list(layout.INTERACTION_ATTRS)] == 0).all().all()
    assert sum(NO_COUNTS in r.getMessage() for r in caplog.records) == 1
