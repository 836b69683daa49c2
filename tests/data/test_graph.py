"""Graph building: validation, pocket crop, radius edges, edge types."""

import numpy as np
import pytest

from pecan.data import graph, layout
from pecan.data.index import DataError


def atoms_at(coords, ligand_count):
    atoms = np.zeros((len(coords), layout.N_COLUMNS), dtype=np.float32)
    atoms[:, :3] = coords
    atoms[:ligand_count, layout.MOLCODE_COLUMN] = 1
    atoms[ligand_count:, layout.MOLCODE_COLUMN] = -1
    atoms[:, 4] = 1  # carbon
    return atoms


def test_crop_keeps_ligand_and_near_protein():
    coords = [[0, 0, 0], [1.5, 0, 0], [4, 0, 0], [7.4, 0, 0], [7.6, 0, 0], [20, 0, 0]]
    atoms = atoms_at(coords, 2)
    kept = graph.crop_pocket(atoms, 6.0)
    assert np.allclose(kept[:, 0], [0, 1.5, 4, 7.4])


def test_edges_and_types_match_brute_force():
    rng = np.random.default_rng(0)
    atoms = atoms_at(rng.uniform(-4, 4, (40, 3)), 8)
    g = graph.build_graph(atoms, pocket_radius=100.0, edge_cutoff=3.0)
    d = np.linalg.norm(g.pos[:, None] - g.pos[None], axis=-1)
    expected = {(i, j) for i in range(40) for j in range(40) if i != j and d[i, j] < 3.0}
    got = set(map(tuple, g.edge_index.T.tolist()))
    assert got == expected
    ligand = g.x[:, layout.MOLCODE_FEATURE] > 0
    for (i, j), t in zip(g.edge_index.T, g.edge_type):
        assert t == 2 - int(ligand[i]) - int(ligand[j])
    assert g.x.shape == (40, 19) and g.x.dtype == np.float32


def test_edges_are_sorted_by_target_then_source():
    # Atoms on a line 1 A apart, cutoff 1.5: each atom's neighbours are the atoms next to it.
    pos = np.array([[0, 0, 0], [1, 0, 0], [2, 0, 0], [3, 0, 0]], dtype=np.float32)
    edges = graph.radius_edges(pos, 1.5)
    assert edges.tolist() == [[1, 0, 2, 1, 3, 2], [0, 1, 1, 2, 2, 3]]


def test_chunked_edges_are_target_sorted(monkeypatch):
    pos = np.random.default_rng(3).uniform(-5, 5, (200, 3)).astype(np.float32)
    monkeypatch.setattr(graph, "CHUNK_ROWS", 23)
    source, target = graph.radius_edges(pos, 2.5)
    order = np.lexsort((source, target))
    assert np.array_equal(order, np.arange(len(target)))


@pytest.mark.parametrize("value", [0.0, 0.5, 2.0])
def test_molcode_other_than_plus_or_minus_one_is_named(value):
    atoms = atoms_at(np.random.default_rng(4).uniform(-3, 3, (6, 3)), 2)
    atoms[3, layout.MOLCODE_COLUMN] = value
    with pytest.raises(DataError, match=r"molcode\) must be \+1 \(ligand\) or -1") as err:
        graph.build_graph(atoms, 6.0, 4.5, where="shard s.hdf5, pose x/y")
    assert "pose x/y" in str(err.value) and "1 row(s)" in str(err.value)


def test_chunked_edges_equal_unchunked(monkeypatch):
    rng = np.random.default_rng(1)
    pos = rng.uniform(-5, 5, (300, 3)).astype(np.float32)
    whole = graph.radius_edges(pos, 2.5)
    monkeypatch.setattr(graph, "CHUNK_ROWS", 37)
    chunked = graph.radius_edges(pos, 2.5)
    assert np.array_equal(whole, chunked)


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda a: a[:, :21], "expected \\[n_atoms, 22\\]"),
        (lambda a: np.where(np.arange(len(a))[:, None] == 1, np.nan, a), "NaN"),
        (lambda a: np.concatenate([a[:, :16], -np.ones((len(a), 1), np.float32), a[:, 17:]], axis=1), "no ligand"),
    ],
)
def test_bad_atoms_are_named(mutate, message):
    atoms = atoms_at(np.random.default_rng(2).uniform(-3, 3, (10, 3)), 3)
    with pytest.raises(DataError, match=message) as err:
        graph.build_graph(mutate(atoms), 6.0, 4.5, where="shard s.hdf5, pose x/y")
    assert "pose x/y" in str(err.value)


# ---------------------------------------------------------------------------- van der Waals radii


def test_given_radii_follow_the_crop_and_derived_ones_fill_in():
    # Protein atom 2 is 9 A from the ligand and is cropped away with its radius 1.3.
    atoms = atoms_at([[0, 0, 0], [1, 0, 0], [10, 0, 0], [0, 3, 0]], 2)
    given = np.array([1.1, 1.2, 1.3, 1.4])
    g = graph.build_graph(atoms, pocket_radius=6.0, edge_cutoff=4.5, vdw=given)
    assert g.vdw.dtype == np.float32 and g.vdw.tolist() == pytest.approx([1.1, 1.2, 1.4])
    derived = graph.build_graph(atoms, pocket_radius=6.0, edge_cutoff=4.5)
    assert derived.vdw.tolist() == pytest.approx([1.70, 1.70, 1.70])  # every atom is carbon


@pytest.mark.parametrize(
    "radii, message",
    [([1.5, 1.5], "'van_der_waals' has 2 values for 3 atoms"), ([1.5, 0.0, 1.5], "non-finite or non-positive")],
)
def test_bad_radii_are_named(radii, message):
    atoms = atoms_at([[0, 0, 0], [1, 0, 0], [2, 0, 0]], 1)
    with pytest.raises(DataError, match=message) as err:
        graph.build_graph(atoms, 6.0, 4.5, where="shard s.hdf5, pose x/y", vdw=np.array(radii))
    assert "pose x/y" in str(err.value)


# ---------------------------------------------------------------------------- size limits at their boundary


def test_max_atoms_is_the_largest_pocket_allowed():
    atoms = atoms_at([[0, 0, 0], [1, 0, 0], [2, 0, 0], [30, 0, 0]], 1)  # 3 atoms in the pocket
    assert graph.build_graph(atoms, 6.0, 4.5, max_atoms=3).num_nodes == 3
    with pytest.raises(DataError) as err:
        graph.build_graph(atoms, 6.0, 4.5, where="shard s.hdf5, pose x/y", max_atoms=2)
    assert "pose x/y" in str(err.value) and "data.max_atoms=2" in str(err.value)


def test_max_edges_is_the_largest_edge_count_allowed():
    # A 1 A chain of 4 atoms with cutoff 1.5: 3 bonds, 6 directed edges.
    atoms = atoms_at([[0, 0, 0], [1, 0, 0], [2, 0, 0], [3, 0, 0]], 1)
    assert graph.build_graph(atoms, 6.0, 1.5, max_edges=6).edge_index.shape == (2, 6)
    with pytest.raises(DataError) as err:
        graph.build_graph(atoms, 6.0, 1.5, where="shard s.hdf5, pose x/y", max_edges=5)
    assert "pose x/y" in str(err.value) and "data.max_edges=5" in str(err.value)


def test_max_edges_counts_edges_across_row_chunks(monkeypatch):
    # Chunks of 2 rows hold 3 and 3 directed edges of the chain: only the total, 6, exceeds 4.
    monkeypatch.setattr(graph, "CHUNK_ROWS", 2)
    pos = np.array([[0, 0, 0], [1, 0, 0], [2, 0, 0], [3, 0, 0]], dtype=np.float32)
    assert graph.radius_edges(pos, 1.5, max_edges=6).shape == (2, 6)
    with pytest.raises(DataError, match="data.max_edges=4"):
        graph.radius_edges(pos, 1.5, max_edges=4)


def test_no_atoms_give_an_empty_edge_list():
    edges = graph.radius_edges(np.zeros((0, 3), dtype=np.float32), 4.5)
    assert edges.shape == (2, 0) and edges.dtype == np.int64


def test_edge_types_are_int8():
    atoms = atoms_at([[0, 0, 0], [1, 0, 0], [2, 0, 0]], 1)
    g = graph.build_graph(atoms, 6.0, 1.5)
    assert g.edge_type.dtype == np.int8 and g.edge_type.tolist() == [1, 1, 2, 2]


# ---------------------------------------------------------------------------- what is not an atom array


@pytest.mark.parametrize("atoms", [[[0.0] * 22] * 3, np.full((3, 22), "a")], ids=["list", "strings"])
def test_non_numeric_atoms_are_a_data_error_naming_the_pose(atoms):
    with pytest.raises(DataError, match="not a numeric array") as err:
        graph.validate_atoms(atoms, "shard s.hdf5, pose x/y")
    assert "pose x/y" in str(err.value)


def test_non_finite_rows_are_counted():
    atoms = atoms_at(np.zeros((5, 3)), 2)
    atoms[1, 0], atoms[1, 5], atoms[3, 7] = np.nan, np.inf, -np.inf  # rows 1 and 3
    with pytest.raises(DataError, match=r"has 2 row\(s\) with NaN"):
        graph.validate_atoms(atoms, "pose x/y")


def test_radii_are_one_per_atom_whatever_their_stored_shape():
    radii = graph.validate_vdw(np.array([[1.7], [1.55], [0.5]]), 3, "shard s.hdf5, pose x/y")
    assert radii.shape == (3,) and radii.dtype == np.float32
    np.testing.assert_allclose(radii, [1.7, 1.55, 0.5])  # any positive radius is accepted, small ones too
    with pytest.raises(DataError, match="non-positive"):
        graph.validate_vdw(np.array([1.7, 0.0, 1.5]), 3, "shard s.hdf5, pose x/y")
