"""Tests for the synthetic shard generator: layout, index, determinism, geometry, ensure."""

import csv
import pathlib
import re
import subprocess
import sys

import h5py
import numpy as np
import pytest

from pecan import synthetic
from pecan.synthetic import chemistry

TINY = dict(
    n_shards=2,
    complexes_per_shard=2,
    poses_per_complex=(3, 4),
    pocket_atoms=(300, 300),
    ligand_atoms=(15, 20),
    progress=False,
)
POSE_ATTRS = {"rmsd", "score", "label", *synthetic.INTERACTION_NAMES}
REPO_ROOT = pathlib.Path(__file__).resolve().parents[2]


def read_index(directory, name="index.csv"):
    with open(pathlib.Path(directory) / name, newline="") as handle:
        reader = csv.reader(handle)
        header = next(reader)
        return header, [dict(zip(header, row)) for row in reader]


def read_samples(shards):
    """{(shard name, pdbid, poseid): (data, attrs)} for every pose and crystal in the shards."""
    samples = {}
    for shard in shards:
        with h5py.File(shard, "r") as h5:
            for pdbid, complex_group in h5.items():
                docking = complex_group[synthetic.DOCKING_GROUP]
                for poseid, pose in docking.items():
                    samples[shard.name, pdbid, poseid] = (pose["data"][()], dict(pose.attrs))
                if synthetic.CRYSTAL_GROUP in complex_group:
                    crystal = complex_group[synthetic.CRYSTAL_GROUP]
                    key = (shard.name, pdbid, "pdbbind")
                    samples[key] = (crystal["data"][()], dict(crystal.attrs))
    return samples


def ligand_rows(data):
    return int((data[:, synthetic.MOLCODE_COLUMN] == 1).sum())


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    out = tmp_path_factory.mktemp("synthetic")
    return out, synthetic.generate_dataset(out, seed=0, **TINY)


def test_layout_and_attributes(dataset):
    out, shards = dataset
    assert [path.name for path in shards] == ["shard_000.hdf5", "shard_001.hdf5"]
    pdbids = []
    for shard in shards:
        with h5py.File(shard, "r") as h5:
            for pdbid, complex_group in h5.items():
                pdbids.append(pdbid)
                assert re.fullmatch(r"[1-9][0-9a-z]{3}", pdbid)
                assert isinstance(complex_group.attrs["affinity"], float)
                assert 2.0 <= complex_group.attrs["affinity"] <= 11.0
                poses = complex_group[synthetic.DOCKING_GROUP]
                assert 3 <= len(poses) <= 4
                assert sorted(poses) == [f"{pdbid}_pose{k:03d}" for k in range(len(poses))]
                groups = [poses[name] for name in poses] + [complex_group[synthetic.CRYSTAL_GROUP]]
                for group in groups:
                    assert set(group.attrs) == POSE_ATTRS
                    assert set(group["data"].attrs) == set()
                    data = group["data"]
                    assert data.dtype == np.float32 and data.ndim == 2 and data.shape[1] == 22
                    assert data.compression is None and data.chunks is None
    assert len(set(pdbids)) == len(pdbids) == 4


def test_rows_are_ligand_then_shared_pocket(dataset):
    _, shards = dataset
    samples = read_samples(shards)
    for (shard, pdbid, poseid), (data, _) in samples.items():
        n_ligand = ligand_rows(data)
        assert 15 <= n_ligand <= 20 and len(data) == n_ligand + 300
        molcode = data[:, synthetic.MOLCODE_COLUMN]
        assert (molcode[:n_ligand] == 1).all() and (molcode[n_ligand:] == -1).all()
        assert (data[:, 3:12].sum(1) == 1).all()
        crystal = samples[shard, pdbid, "pdbbind"][0]
        # the pocket and every ligand feature are shared; only ligand coordinates move
        np.testing.assert_array_equal(data[n_ligand:], crystal[n_ligand:])
        np.testing.assert_array_equal(data[:n_ligand, 3:], crystal[:n_ligand, 3:])


def test_feature_flags_follow_elements(dataset):
    _, shards = dataset
    data = np.concatenate([data for data, _ in read_samples(shards).values()])
    element = data[:, 3:12].argmax(1)
    polar = np.isin(element, [chemistry.N, chemistry.O])
    assert polar[data[:, 20] == 1].all(), "donors must be N or O"
    assert polar[data[:, 19] == 1].all(), "acceptors must be N or O"
    assert set(np.unique(data[:, 12])) <= {1.0, 2.0, 3.0}
    assert np.abs(data[:, 15]).max() <= 1.0


def test_index_matches_shards(dataset):
    out, shards = dataset
    header, rows = read_index(out)
    assert tuple(header) == synthetic.INDEX_COLUMNS
    samples = read_samples(shards)
    assert len(rows) == len(samples)
    for row in rows:
        data, attrs = samples[row["shard"], row["pdbid"], row["poseid"]]
        assert int(row["is_crystal"]) == (row["poseid"] == "pdbbind")
        assert int(row["label"]) == attrs["label"]
        for name in ("rmsd", "score", *synthetic.INTERACTION_NAMES):
            assert float(row[name]) == attrs[name], name
        with h5py.File(out / row["shard"], "r") as h5:
            assert float(row["affinity"]) == h5[row["pdbid"]].attrs["affinity"]


def test_labels_and_rmsd_match_geometry(dataset):
    _, shards = dataset
    samples = read_samples(shards)
    for (shard, pdbid, poseid), (data, attrs) in samples.items():
        crystal = samples[shard, pdbid, "pdbbind"][0]
        n_ligand = ligand_rows(data)
        delta = data[:n_ligand, :3].astype(np.float64) - crystal[:n_ligand, :3]
        assert attrs["rmsd"] == pytest.approx(np.sqrt((delta**2).sum(1).mean()), abs=1e-6)
        assert attrs["label"] == int(attrs["rmsd"] < 2.0)
    crystal_attrs = [attrs for (_, _, poseid), (_, attrs) in samples.items() if poseid == "pdbbind"]
    assert all(attrs["rmsd"] == 0.0 and attrs["label"] == 1 for attrs in crystal_attrs)


def test_crystal_pose_does_not_clash(dataset):
    _, shards = dataset
    for (_, _, poseid), (data, _) in read_samples(shards).items():
        if poseid != "pdbbind":
            continue
        n_ligand = ligand_rows(data)
        ligand, pocket = data[:n_ligand, :3], data[n_ligand:, :3]
        gaps = np.linalg.norm(ligand[:, None] - pocket[None], axis=-1)
        assert gaps.min() > 2.5
        assert (gaps.min(0) < 4.5).sum() >= n_ligand, "pocket should wrap the ligand"


def test_same_seed_is_identical_and_other_seed_differs(tmp_path, dataset):
    _, first = dataset
    again = synthetic.generate_dataset(tmp_path / "again", seed=0, **TINY)
    other = synthetic.generate_dataset(tmp_path / "other", seed=1, **TINY)
    reference = read_samples(first)
    repeat = read_samples(again)
    assert reference.keys() == repeat.keys()
    for key, (data, attrs) in reference.items():
        np.testing.assert_array_equal(data, repeat[key][0])
        assert attrs == repeat[key][1]
    different = read_samples(other)
    assert reference.keys() != different.keys()
    first_arrays = [data for data, _ in reference.values()]
    other_arrays = [data for data, _ in different.values()]
    assert not any(a.shape == b.shape and np.array_equal(a, b) for a, b in zip(first_arrays, other_arrays))


def test_docked_rmsd_spread():
    rmsd = np.concatenate(
        [
            [
                attrs["rmsd"]
                for attrs in synthetic.generate_complex(
                    index, seed=5, pocket_atoms=(300, 300), ligand_atoms=(15, 25)
                ).pose_attrs
            ]
            for index in range(12)
        ]
    )
    assert 0.15 < (rmsd < 2.0).mean() < 0.5
    assert rmsd.max() > 7.0 and rmsd.min() < 1.0


def test_no_crystal_option(tmp_path):
    shards = synthetic.generate_dataset(tmp_path, seed=2, with_crystal=False, **TINY)
    samples = read_samples(shards)
    assert all(poseid != "pdbbind" for _, _, poseid in samples)
    _, rows = read_index(tmp_path)
    assert len(rows) == len(samples) and all(row["is_crystal"] == "0" for row in rows)


def test_no_temporary_files_left(dataset):
    out, _ = dataset
    assert not [path.name for path in out.iterdir() if ".tmp" in path.name]


def test_ensure_dataset_reuses_then_regenerates(tmp_path):
    settings = {key: value for key, value in TINY.items() if key != "n_shards"}
    shards = synthetic.ensure_dataset(tmp_path, n_shards=2, **settings)
    before = [(path.stat().st_ino, path.stat().st_mtime_ns) for path in shards]
    assert synthetic.ensure_dataset(tmp_path, n_shards=2, **settings) == shards
    assert [(path.stat().st_ino, path.stat().st_mtime_ns) for path in shards] == before

    fewer = synthetic.ensure_dataset(tmp_path, n_shards=1, **settings)
    assert fewer == [tmp_path / "shard_000.hdf5"]
    assert fewer[0].stat().st_ino != before[0][0]
    assert not (tmp_path / "shard_001.hdf5").exists(), "stale shard from the larger set"
    assert not [path.name for path in tmp_path.iterdir() if ".tmp" in path.name]


def test_ensure_dataset_regenerates_incomplete_directory(tmp_path):
    shards = synthetic.ensure_dataset(tmp_path, seed=3, **TINY)
    shards[1].unlink()
    again = synthetic.ensure_dataset(tmp_path, seed=3, **TINY)
    assert again == shards and shards[1].exists()


def make_synthetic(*args: str) -> list[str]:
    """scripts/make_synthetic.py with ``args``: one shard of one complex with 3 small poses, no progress bar."""
    tiny = ["--shards", "1", "--complexes-per-shard", "1", "--poses-per-complex", "3:3", "--pocket-atoms", "300"]
    return [sys.executable, "scripts/make_synthetic.py", *args, *tiny, "--ligand-atoms", "15:16", "--no-progress"]


def test_command_line_from_repo_root(tmp_path):
    command = make_synthetic("--out", str(tmp_path), "--seed", "4", "--no-crystal")
    result = subprocess.run(command, cwd=REPO_ROOT, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    _, rows = read_index(tmp_path)
    assert len(rows) == 3 and (tmp_path / "shard_000.hdf5").exists()


def test_shard_content_depends_only_on_global_complex_index(dataset):
    _, shards = dataset
    record = synthetic.generate_complex(
        3, seed=0, poses_per_complex=(3, 4), pocket_atoms=(300, 300), ligand_atoms=(15, 20)
    )
    samples = read_samples([shards[1]])
    np.testing.assert_array_equal(samples["shard_001.hdf5", record.complex_id, "pdbbind"][0], record.crystal)
    for k, pose in enumerate(record.poses):
        data, attrs = samples["shard_001.hdf5", record.complex_id, record.pose_id(k)]
        np.testing.assert_array_equal(data, pose)
        assert attrs == record.pose_attrs[k]


def test_command_line_config_generates_once(tmp_path):
    out = tmp_path / "demo"
    config = tmp_path / "run.yaml"
    config.write_text(f"data:\n  data_dir: {out}\n  train_csvs: [samples.csv]\n")
    command = make_synthetic("--config", str(config))
    stamps = []
    for _ in range(2):
        result = subprocess.run(command, cwd=REPO_ROOT, capture_output=True, text=True, timeout=60)
        assert result.returncode == 0, result.stderr
        stamps.append((out / "shard_000.hdf5").stat().st_mtime_ns)
    assert stamps[0] == stamps[1]
    _, rows = read_index(out, "samples.csv")
    assert len(rows) == 4


def test_dataset_is_current(tmp_path):
    assert not synthetic.dataset_is_current(tmp_path, seed=6, **TINY)
    synthetic.ensure_dataset(tmp_path, seed=6, **TINY)
    assert synthetic.dataset_is_current(tmp_path, seed=6, **TINY)
    assert not synthetic.dataset_is_current(tmp_path, seed=7, **TINY)
    synthetic.generate_dataset(tmp_path, seed=7, **TINY)  # a plain rewrite writes its own marker, last
    assert synthetic.dataset_is_current(tmp_path, seed=7, **TINY)
    assert not synthetic.dataset_is_current(tmp_path, seed=6, **TINY)


@pytest.mark.slow
def test_training_path_does_not_import_the_generator():
    """The simulator is a tool beside the trainer: importing the app and its data path must not load it."""
    code = (
        "import sys, main_app, pecan.train.trainer, pecan.data.loader, pecan.data.packed; "
        "print(sorted(m for m in sys.modules if m.startswith('pecan.synthetic')))"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=REPO_ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
