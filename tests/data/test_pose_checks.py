"""A pose that cannot be one stops the run naming its shard and pose, or is dropped and counted
under data.on_bad_sample=skip: coordinates in nm, a ligand far from its receptor, no protein atoms, one
point, an absurd feature, float64 that overflows float32, a 2D ligand, NaN or infinite coordinates (skipped
on every io_mode), a pose over data.max_atoms or data.max_edges."""

from __future__ import annotations

import h5py
import numpy as np
import pytest

from tests.app_run import CLEAN_TRAIN_SAMPLES, TRAIN_COMPLEXES, first_pose, records, rewrite_pose, run
from tests.shards import set_atom_value


def trained_without_first_pose() -> int:
    return CLEAN_TRAIN_SAMPLES - (1 if "c000" in TRAIN_COMPLEXES else 0)


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


def test_2d_ligand_is_named_2d_not_nm(tmp_path, data_dir, caplog, capsys):
    from tests.app_run import rewrite_pose

    def flatten(atoms):
        ligand = atoms[:, 16] > 0
        atoms[ligand, 2] = 0.0
        atoms[ligand, :2] *= 0.4  # 2D depictions often have short bonds too
        return atoms

    rewrite_pose(data_dir, flatten)
    code, text = run(tmp_path, data_dir, caplog=caplog, capsys=capsys)
    assert code == 1
    assert "c000_pose0" in text and "ligand coordinates are 2D" in text and "look like nm" not in text


def test_nan_coordinates_name_pose(tmp_path, data_dir, caplog, capsys):
    shard, pose = first_pose(data_dir)
    with h5py.File(shard, "a") as handle:
        set_atom_value(handle[pose], 1, 1, np.inf)
    code, text = run(tmp_path, data_dir, caplog=caplog, capsys=capsys)
    assert code == 1 and "pose c000/c000_pose0" in text and "NaN or infinite" in text


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


@pytest.mark.parametrize("key, value", [("max_atoms", 10), ("max_edges", 5)])
def test_oversize_pose_rejected_before_edges(tmp_path, data_dir, caplog, capsys, key, value):
    code, text = run(tmp_path, data_dir, f"data.{key}={value}", caplog=caplog, capsys=capsys)
    assert code == 1 and f"data.{key}={value}" in text and "shard_" in text and ", pose c" in text
