"""Pose sanity checks on hand-built atoms: units, frames, degenerate geometry, float32 overflow, features."""

from __future__ import annotations

import numpy as np
import pytest

from pecan.data import geometry
from pecan.data.graph import build_graph
from pecan.runtime.errors import DataError

# Ethane-like ligand (C-C 1.54 A) and three protein atoms 3.5-5 A away.
LIGAND = [[0.0, 0.0, 0.0], [1.54, 0.0, 0.0], [2.05, 1.45, 0.0]]
PROTEIN = [[0.0, 3.5, 0.0], [1.5, -4.0, 0.0], [4.0, 3.0, 1.0]]


def pose(ligand=LIGAND, protein=PROTEIN, dtype=np.float32) -> np.ndarray:
    atoms = np.zeros((len(ligand) + len(protein), 22), dtype=dtype)
    atoms[:, :3] = np.asarray(ligand + protein)
    atoms[:, 4] = 1.0  # carbon
    atoms[: len(ligand), 16], atoms[len(ligand) :, 16] = 1.0, -1.0
    return atoms


def test_a_plausible_pose_builds():
    assert build_graph(pose(), 6.0, 4.5, "p").num_nodes == 6


@pytest.mark.parametrize(
    "atoms, message",
    [
        (
            pose(ligand=[[x / 10 for x in a] for a in LIGAND]),
            "look like nm, not Angstrom: ligand heavy atoms are 0.154",
        ),
        (pose(ligand=[[x * 10 for x in a] for a in LIGAND]), "do not look like Angstrom"),
        (pose(protein=[]), "0 protein atoms"),
        (pose(ligand=[[1.0, 1.0, 1.0]] * 3), "degenerate geometry: all ligand atoms"),
        (pose(ligand=[[0.0, 0.0, 0.0]] * 3, protein=[[0.0, 0.0, 0.0]]), "degenerate geometry: all atoms"),
        (pose(ligand=[[a[0] + 1000.0, a[1], a[2]] for a in LIGAND]), "no receptor atom within 6 Å — different frames?"),
    ],
)
def test_impossible_geometry_is_named(atoms, message):
    with pytest.raises(DataError, match=f"^shard s, pose p: .*{message}"):
        build_graph(atoms, 6.0, 4.5, "shard s, pose p")


def test_finite_float64_that_overflows_float32_is_an_error():
    atoms = pose(dtype=np.float64)
    atoms[4, 15] = 1e39  # finite as float64
    with pytest.raises(DataError, match="1 row\\(s\\) with values that overflow float32"):
        build_graph(atoms, 6.0, 4.5, "p")


@pytest.mark.parametrize("column, value", [(15, 3e38), (12, -1.0), (19, 2.0), (5, 0.5 + 1)])
def test_feature_outside_its_range_names_column(column, value):
    atoms = pose()
    atoms[1, column] = value
    low, high = geometry.FEATURE_RANGES[column]
    with pytest.raises(DataError, match=f"column {column} must lie in \\[{low:g}, {high:g}\\]; 1 row"):
        build_graph(atoms, 6.0, 4.5, "p")


def test_pose_features_checked_after_the_cast():
    assert geometry.check_pose_features(np.array([1.0, 2, 0, 0, 3]), "p").dtype == np.float32
    with pytest.raises(DataError, match="overflow float32"):
        geometry.check_pose_features(np.array([1e39, 0, 0, 0, 0]), "p")
    with pytest.raises(DataError, match="exceeds 10000"):
        geometry.check_pose_features(np.array([3e4, 0, 0, 0, 0]), "p")
