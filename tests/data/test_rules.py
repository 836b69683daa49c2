"""Documented data rules at their exact boundaries, against hand-written expected values.

docs/data-path.md: a missing label is ``rmsd < data.rmsd_threshold`` (so exactly 2.0 A is a decoy); graphs keep
protein atoms *within* ``data.pocket_radius`` of a ligand atom (inclusive) and connect atoms *closer than*
``data.edge_cutoff`` (exclusive); crystal poses are samples with label 1 and rmsd 0 when
``data.use_crystal`` is on, and absent when it is off, whichever path built the index.
"""

from pathlib import Path

import h5py
import numpy as np
import pandas as pd
import pytest

from pecan.data import graph, layout
from pecan.data import index as idx
from tests.shards import make_atoms, with_required_columns

THRESHOLD = 2.0
# rmsd -> label, written out by hand from "near-native is rmsd < threshold".
RMSD_LABELS = {0.0: 1, 1.0: 1, 1.999: 1, 2.0: 0, 2.001: 0, 7.5: 0}
COMMON = dict(
    pose_group=layout.DEFAULT_POSE_GROUP,
    crystal_group=layout.DEFAULT_CRYSTAL_GROUP,
    rmsd_threshold=THRESHOLD,
    index_prefix="pecan",
    write_csv=False,
)


def atoms_at(coords, ligand_count):
    atoms = np.zeros((len(coords), layout.N_COLUMNS), dtype=np.float32)
    atoms[:, :3] = coords
    atoms[:ligand_count, layout.MOLCODE_COLUMN] = 1
    atoms[ligand_count:, layout.MOLCODE_COLUMN] = -1
    atoms[:, 4] = 1
    return atoms


def write_unlabelled_shard(path: Path, rmsds, crystal_attrs=None) -> None:
    """One complex whose poses carry only an rmsd (no label), plus an optional crystal group."""
    rng = np.random.default_rng(0)
    with h5py.File(path, "w") as handle:
        group = handle.create_group("cplx")
        for number, rmsd in enumerate(rmsds, start=1):
            pose = group.create_group(f"{layout.DEFAULT_POSE_GROUP}/{number}")
            pose.create_dataset("data", data=make_atoms(rng))
            pose.attrs["rmsd"] = rmsd
        if crystal_attrs is not None:
            crystal = group.create_group(layout.DEFAULT_CRYSTAL_GROUP)
            crystal.create_dataset("data", data=make_atoms(rng))
            for key, value in crystal_attrs.items():
                crystal.attrs[key] = value


# ---------------------------------------------------------------------------- labels from rmsd


def test_label_from_rmsd_at_threshold_in_a_csv(tmp_path):
    write_unlabelled_shard(tmp_path / "s.hdf5", [])
    rmsds = list(RMSD_LABELS)
    pd.DataFrame(
        {"shard": "s.hdf5", "pdbid": "cplx", "poseid": [str(i) for i in range(len(rmsds))], "rmsd": rmsds}
    ).pipe(with_required_columns).to_csv(tmp_path / "index.csv", index=False)
    frame = idx.read_index_csv(tmp_path / "index.csv", str(tmp_path), THRESHOLD)
    assert dict(zip(frame["rmsd"], frame["label"])) == RMSD_LABELS


def test_label_from_rmsd_at_threshold_derived_from_shards(tmp_path):
    rmsds = list(RMSD_LABELS)
    write_unlabelled_shard(tmp_path / "s.hdf5", rmsds)
    frame = idx.derive_index(
        [tmp_path / "s.hdf5"],
        idx.IndexSettings(layout.DEFAULT_POSE_GROUP, layout.DEFAULT_CRYSTAL_GROUP, False, THRESHOLD),
    )
    assert frame["label"].dtype.kind == "i"
    assert dict(zip(frame["rmsd"].round(3), frame["label"])) == RMSD_LABELS


def test_threshold_is_the_configured_one(tmp_path):
    write_unlabelled_shard(tmp_path / "s.hdf5", [0.9, 1.0, 1.1])
    frame = idx.derive_index(
        [tmp_path / "s.hdf5"], idx.IndexSettings(layout.DEFAULT_POSE_GROUP, layout.DEFAULT_CRYSTAL_GROUP, False, 1.0)
    )
    assert frame["label"].tolist() == [1, 0, 0]


def test_label_source_stored_keeps_labels_that_contradict_rmsd_and_rmsd_derives_them(tmp_path):
    write_unlabelled_shard(tmp_path / "s.hdf5", [])
    pd.DataFrame(
        {"shard": "s.hdf5", "pdbid": "cplx", "poseid": ["a", "b", "c"], "rmsd": [0.5, 5.0, np.nan], "label": [0, 1, 1]}
    ).pipe(with_required_columns).to_csv(tmp_path / "index.csv", index=False)
    frame = idx.read_index_csv(tmp_path / "index.csv", str(tmp_path), THRESHOLD, label_source="stored")
    assert frame["label"].tolist() == [0, 1, 1]
    # auto (the default) compares the two sources: the first contradiction is named, with the count.
    with pytest.raises(idx.DataError, match=r"cplx/a .* has label 0 but rmsd 0.5 .* 2 of 2 labelled rows"):
        idx.read_index_csv(tmp_path / "index.csv", str(tmp_path), THRESHOLD)
    warned = idx.read_index_csv(tmp_path / "index.csv", str(tmp_path), THRESHOLD, label_conflict="warn")
    assert warned["label"].tolist() == [0, 1, 1]
    # rmsd derives every label; a row with a label but no rmsd (pose c) is then an error naming it.
    with pytest.raises(idx.DataError, match="cplx/c .* has a label but no rmsd"):
        idx.read_index_csv(tmp_path / "index.csv", str(tmp_path), THRESHOLD, label_source="rmsd")


def test_no_label_and_no_rmsd_is_an_error_naming_the_pose(tmp_path):
    write_unlabelled_shard(tmp_path / "s.hdf5", [])
    pd.DataFrame({"shard": "s.hdf5", "pdbid": "cplx", "poseid": ["a", "b"], "rmsd": [0.5, np.nan]}).pipe(
        with_required_columns
    ).to_csv(tmp_path / "index.csv", index=False)
    with pytest.raises(idx.DataError, match="cplx/b"):
        idx.read_index_csv(tmp_path / "index.csv", str(tmp_path), THRESHOLD)


# ---------------------------------------------------------------------------- crystal rows, both paths


def crystal_csv(tmp_path: Path) -> Path:
    write_unlabelled_shard(tmp_path / "s.hdf5", [1.0, 3.0], crystal_attrs={})
    path = tmp_path / "index.csv"
    pd.DataFrame(
        {
            "shard": "s.hdf5",
            "pdbid": "cplx",
            "poseid": ["1", "2", "pdbbind"],
            "rmsd": [1.0, 3.0, 0.0],
            "is_crystal": [0, 0, 1],
        }
    ).pipe(with_required_columns).to_csv(path, index=False)
    return path


@pytest.mark.parametrize("source", ["csv", "derived"])
@pytest.mark.parametrize("use_crystal", [True, False])
def test_crystal_rows_on_both_index_paths(tmp_path, source, use_crystal):
    csv = crystal_csv(tmp_path)
    csvs, fns = ([str(csv)], []) if source == "csv" else ([], [str(tmp_path / "s.hdf5")])
    frame = idx.build_index(csvs, fns, str(tmp_path), use_crystal=use_crystal, **COMMON)
    rows = {(r.pose_id, r.is_crystal, r.label, r.rmsd) for r in frame.itertuples()}
    expected = {("1", 0, 1, 1.0), ("2", 0, 0, 3.0)}
    if use_crystal:
        expected.add(("pdbbind", 1, 1, 0.0))
    assert rows == expected


def test_crystal_without_attributes_is_rmsd_zero_label_one(tmp_path):
    write_unlabelled_shard(tmp_path / "s.hdf5", [4.0], crystal_attrs={})
    frame = idx.derive_index(
        [tmp_path / "s.hdf5"],
        idx.IndexSettings(layout.DEFAULT_POSE_GROUP, layout.DEFAULT_CRYSTAL_GROUP, True, THRESHOLD),
    )
    crystal = frame[frame["is_crystal"] == 1]
    assert crystal["pose_id"].tolist() == ["pdbbind"]
    assert crystal["rmsd"].tolist() == [0.0] and crystal["label"].tolist() == [1]
    assert frame.loc[frame["is_crystal"] == 0, "label"].tolist() == [0]


def test_crystal_keeps_its_own_rmsd_when_stored(tmp_path):
    write_unlabelled_shard(tmp_path / "s.hdf5", [3.0], crystal_attrs={"rmsd": 0.25, "score": -9.0})
    frame = idx.derive_index(
        [tmp_path / "s.hdf5"],
        idx.IndexSettings(layout.DEFAULT_POSE_GROUP, layout.DEFAULT_CRYSTAL_GROUP, True, THRESHOLD),
    )
    crystal = frame[frame["is_crystal"] == 1]
    assert crystal["rmsd"].tolist() == [0.25] and crystal["docking_score"].tolist() == [-9.0]


# ---------------------------------------------------------------------------- graph boundaries


def test_protein_atom_exactly_at_pocket_radius_is_kept():
    # Distances 6.0 (= radius, kept: "within"), 6.01 (dropped) from the only ligand atom.
    atoms = atoms_at([[0, 0, 0], [0, 6.0, 0], [0, 0, 6.01], [-6.0, 0, 0]], 1)
    kept = graph.crop_pocket(atoms, 6.0)
    assert kept[:, :3].tolist() == [[0, 0, 0], [0, 6.0, 0], [-6.0, 0, 0]]


def test_crop_measures_to_the_nearest_ligand_atom():
    # 9 A from ligand atom 0 but 5 A from ligand atom 1.
    atoms = atoms_at([[0, 0, 0], [4, 0, 0], [9, 0, 0], [-9, 0, 0]], 2)
    kept = graph.crop_pocket(atoms, 6.0)
    assert kept[:, 0].tolist() == [0, 4, 9]


def test_pair_exactly_at_edge_cutoff_is_not_connected():
    pos = np.array([[0, 0, 0], [4.5, 0, 0], [0, 4.49, 0], [0, 0, -9]], dtype=np.float32)
    edges = graph.radius_edges(pos, 4.5)
    assert sorted(map(tuple, edges.T.tolist())) == [(0, 2), (2, 0)]


def test_build_graph_edge_types_by_hand():
    # ligand 0, 1; protein 2, 3 in a line 1 A apart, cutoff 1.5: chain edges only.
    atoms = atoms_at([[0, 0, 0], [1, 0, 0], [2, 0, 0], [3, 0, 0]], 2)
    g = graph.build_graph(atoms, pocket_radius=10.0, edge_cutoff=1.5)
    types = {tuple(e): int(t) for e, t in zip(g.edge_index.T.tolist(), g.edge_type)}
    assert types == {(0, 1): 0, (1, 0): 0, (1, 2): 1, (2, 1): 1, (2, 3): 2, (3, 2): 2}


def test_a_stored_label_wins_over_rmsd_derived_from_shards_under_label_source_stored(tmp_path):
    write_unlabelled_shard(tmp_path / "s.hdf5", [0.5, 5.0, 1.0])
    with h5py.File(tmp_path / "s.hdf5", "a") as handle:
        for number, label in ((1, 0), (2, 1)):  # both disagree with their rmsd; pose 3 has no label
            handle[f"cplx/{layout.DEFAULT_POSE_GROUP}/{number}"].attrs["label"] = label
    frame = idx.derive_index(
        [tmp_path / "s.hdf5"],
        idx.IndexSettings(
            layout.DEFAULT_POSE_GROUP, layout.DEFAULT_CRYSTAL_GROUP, False, THRESHOLD, label_source="stored"
        ),
    )
    assert dict(zip(frame["pose_id"], frame["label"])) == {"1": 0, "2": 1, "3": 1}
    derived = idx.derive_index(
        [tmp_path / "s.hdf5"],
        idx.IndexSettings(
            layout.DEFAULT_POSE_GROUP, layout.DEFAULT_CRYSTAL_GROUP, False, THRESHOLD, label_source="rmsd"
        ),
    )
    assert dict(zip(derived["pose_id"], derived["label"])) == {"1": 1, "2": 0, "3": 1}
