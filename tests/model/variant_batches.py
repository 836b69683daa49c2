"""Tiny hand-made batches and configs for the variant tests."""

from __future__ import annotations

import numpy as np
import torch

from pecan import config as cfgmod
from pecan.data import layout
from pecan.data.batch import GraphBatch, concat
from pecan.data.graph import build_graph
from pecan.data.h5dataset import graph_to_data
from pecan.data.sample import missing_docking_features
from tests.shards import make_atoms

VARIANTS = ("sgcnn", "ggcnn", "cnn3d")
TINY = {
    "sgcnn": dict(covalent_gather_width=16, noncovalent_gather_width=16, noncovalent_cutoff=4.5, rbf=8),
    "ggcnn": dict(gated_width=16, gated_steps=2),
    "cnn3d": dict(grid_size=8, resolution=1.5, channels=4, blocks=2, max_shift=1.0),
}


def tiny_section(variant: str, **overrides):
    """The model config section of ``variant`` with tiny sizes."""
    return cfgmod.model_section_class(variant)(name=variant, **{**TINY[variant], **overrides})


def tiny_model(variant: str, seed: int = 0, **overrides):
    """A built tiny model of ``variant``."""
    import model

    torch.manual_seed(seed)
    return model.build_model(variant, tiny_section(variant, **overrides))


def tiny_atoms(seed: int) -> np.ndarray:
    """22-column atoms with a guaranteed covalent-length ligand pair (1.2 A apart)."""
    atoms = make_atoms(np.random.default_rng(seed), n_ligand=6, n_protein=14)
    atoms[1, :3] = atoms[0, :3] + np.array([1.2, 0.0, 0.0], dtype=np.float32)
    return atoms


def sample_values(label: float, pose_features: np.ndarray, complex_code: int, sample_id: int) -> dict:
    """One sample's per-graph contract values, as SampleTable.sample_field_values gives them."""
    return {
        "y": np.array([label]),
        "pose_features": pose_features,
        "docking_features": missing_docking_features(1),
        "complex_code": np.array([complex_code]),
        "sample_id": np.array([sample_id]),
    }


def tiny_batch(graphs: int = 3, seed: int = 0, edge_cutoff: float = 4.5) -> GraphBatch:
    """A batch of ``graphs`` small poses, built as the HDF5 reader builds its batches."""
    items = []
    for k in range(graphs):
        graph = build_graph(tiny_atoms(seed + k), pocket_radius=100.0, edge_cutoff=edge_cutoff)
        items.append(graph_to_data(graph, sample_values(float(k % 2), np.arange(5, dtype=np.float32), k, k)))
    return concat(items)


def graph_from_arrays(x: np.ndarray, pos: np.ndarray, edge_cutoff: float = 4.5) -> GraphBatch:
    """A one-graph batch from explicit features and positions (no pocket crop)."""
    atoms = np.concatenate([pos, x], axis=1).astype(np.float32)
    graph = build_graph(atoms, pocket_radius=1e6, edge_cutoff=edge_cutoff)
    return concat([graph_to_data(graph, sample_values(1.0, np.zeros(5, np.float32), 0, 0))])


def features(n: int, n_ligand: int, seed: int = 0) -> np.ndarray:
    """Random 19-column features with a carbon bit and the molcode set."""
    rng = np.random.default_rng(seed)
    x = np.zeros((n, layout.N_FEATURES), dtype=np.float32)
    x[:, 1] = 1.0
    values = rng.normal(size=(n, 4))
    x[:, 9:12] = np.abs(values[:, :3])  # hybridization and valences: non-negative, as the data checks require
    x[:, 12] = values[:, 3]  # partial charge
    x[:, layout.MOLCODE_FEATURE] = -1.0
    x[:n_ligand, layout.MOLCODE_FEATURE] = 1.0
    return x
