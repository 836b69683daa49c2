"""Graph building: validation, pocket crop, radius edges, edge types."""
import numpy as np
import pytest

from pecan.data import format as fmt
from pecan.data import graph
from pecan.data.index import DataError


def atoms_at(coords, ligand_count):
    atoms = np.zeros((len(coords), fmt.N_COLUMNS), dtype=np.float32)
    atoms[:, :3] = coords
    atoms[:ligand_count, fmt.MOLCODE_COLUMN] = 1
    atoms[ligand_count:, fmt.MOLCODE_COLUMN] = -1
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
    ligand = g.x[:, fmt.MOLCODE_FEATURE] > 0
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


def test_chunked_edges_equal_unchunked(monkeypatch):
    rng = np.random.default_rng(1)
    pos = rng.uniform(-5, 5, (300, 3)).astype(np.float32)
    whole = graph.radius_edges(pos, 2.5)
    monkeypatch.setattr(graph, "CHUNK_ROWS", 37)
    chunked = graph.radius_edges(pos, 2.5)
    assert np.array_equal(whole, chunked)


@pytest.mark.parametrize("mutate, message", [
    (lambda a: a[:, :21], "expected \\[n_atoms, 22\\]"),
    (lambda a: np.where(np.arange(len(a))[:, None] == 1, np.nan, a), "NaN"),
    (lambda a: np.concatenate([a[:, :16], -np.ones((len(a), 1), np.float32), a[:, 17:]], axis=1), "no ligand"),
])
def test_bad_atoms_are_named(mutate, message):
    atoms = atoms_at(np.random.default_rng(2).uniform(-3, 3, (10, 3)), 3)
    with pytest.raises(DataError, match=message) as err:
        graph.build_graph(mutate(atoms), 6.0, 4.5, where="shard s.hdf5, pose x/y")
    assert "pose x/y" in str(err.value)


def test_random_rotation_is_proper():
    rotation = graph.random_rotation(np.random.default_rng(3))
    assert np.allclose(rotation @ rotation.T, np.eye(3), atol=1e-5)
    assert np.isclose(np.linalg.det(rotation), 1.0, atol=1e-5)
