"""A shard the reader cannot read as written: truncated, not HDF5, a stray dataset or a missing pose
group, an attribute that is empty or not a number, data stored as a group, a dataset compressed with a
filter this HDF5 lacks. Each stops the run naming the shard, the pose and what is wrong, or is dropped and
counted under data.on_bad_sample=skip."""

from __future__ import annotations

import h5py
import numpy as np
import pytest

from tests.app_run import POSES, derive, first_pose, records, run


@pytest.mark.parametrize("value", ["yes", b"yes"])
@pytest.mark.parametrize("index", ["csv", "derived"])
def test_shard_attribute_that_is_not_a_number_names_pose_and_attribute(
    tmp_path, data_dir, caplog, capsys, value, index
):
    import h5py

    from tests.app_run import first_pose

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

    from tests.app_run import first_pose

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


@pytest.mark.slow
def test_non_hdf5_shard_skipped_under_skip(tmp_path, data_dir, caplog, capsys):
    (data_dir / "shard_1.hdf5").write_bytes(b"not an hdf5 file" * 100)
    code, text = run(
        tmp_path, data_dir, "data.on_bad_sample=skip", "train.max_steps_per_epoch=1", caplog=caplog, capsys=capsys
    )
    assert code == 0, text
    assert records(tmp_path)[0]["skipped_at_start"] == 12 and "shard_1.hdf5" in text


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


@pytest.mark.parametrize("io_mode", ["packed", "reopen"])
def test_data_stored_as_group_names_pose(tmp_path, data_dir, caplog, capsys, io_mode):
    shard, pose = first_pose(data_dir)
    with h5py.File(shard, "a") as handle:
        del handle[f"{pose}/data"]
        handle.create_group(f"{pose}/data")
    code, text = run(tmp_path, data_dir, f"data.io_mode={io_mode}", caplog=caplog, capsys=capsys)
    assert code == 1 and "shard_0.hdf5, pose c000/c000_pose0" in text and "Traceback" not in text
