"""Packed gather: flat batch arrays from samples of several packs, and the Batch built from them, against
values written out by hand."""

import numpy as np
import torch

from pecan.data import layout, packed


def pack(atoms_per_sample, edges_per_sample, first_radius):
    """A pack whose samples have the given atom counts and local edges; atom k of the pack has x[:, 0] = k,
    pos = (k, 0, 0), radius first_radius + k/10; the first atom of each sample is a ligand atom."""
    n = sum(atoms_per_sample)
    x = np.zeros((n, layout.N_FEATURES), dtype=np.float32)
    x[:, 0] = np.arange(n)
    x[:, layout.MOLCODE_FEATURE] = -1
    x[np.cumsum([0, *atoms_per_sample[:-1]]), layout.MOLCODE_FEATURE] = 1
    edges = [e for sample in edges_per_sample for e in sample]
    return {
        "atom_offsets": np.cumsum([0, *atoms_per_sample]),
        "x": x,
        "pos": np.stack([np.arange(n), np.zeros(n), np.zeros(n)], axis=1).astype(np.float32),
        "vdw": (first_radius + np.arange(n) / 10).astype(np.float32),
        "edge_offsets": np.cumsum([0, *map(len, edges_per_sample)]),
        "edge_src": np.array([s for s, _, _ in edges], dtype=np.int32),
        "edge_dst": np.array([d for _, d, _ in edges], dtype=np.int32),
        "edge_type": np.array([t for _, _, t in edges], dtype=np.int8),
    }


PACKS = [pack([2, 3], [[(0, 1, 0), (1, 0, 0)], [(0, 2, 1), (2, 0, 1)]], 1.0), pack([2], [[(1, 0, 2)]], 2.0)]


def test_gather_concatenates_samples_in_order_and_shifts_edges():
    # Batch order: pack 0 sample 1 (atoms 2-4), pack 1 sample 0 (atoms 0-1), pack 0 sample 0 (atoms 0-1).
    arrays = packed.gather_batch(PACKS, np.array([0, 1, 0]), np.array([1, 0, 0]))
    assert arrays["x"][:, 0].tolist() == [2, 3, 4, 0, 1, 0, 1]
    assert arrays["pos"][:, 0].tolist() == [2, 3, 4, 0, 1, 0, 1]
    assert arrays["vdw"].tolist() == np.float32([1.2, 1.3, 1.4, 2.0, 2.1, 1.0, 1.1]).tolist()
    assert arrays["atom_counts"].tolist() == [3, 2, 2]
    # Sample 0's local edges 0<->2 are batch 0<->2; sample 1's 1->0 is 4->3; sample 2's 0<->1 is 5<->6.
    assert arrays["edge_index"].tolist() == [[0, 2, 4, 5, 6], [2, 0, 3, 6, 5]]
    assert arrays["edge_index"].dtype == np.int64
    assert arrays["edge_type"].tolist() == [1, 1, 2, 0, 0]


def test_batch_from_gathered_arrays():
    arrays = packed.gather_batch(PACKS, np.array([0, 1]), np.array([1, 0]))
    batch = packed.to_batch(
        arrays,
        {
            "y": np.float32([1, 0]),
            "pose_features": np.zeros((2, 5), np.float32),
            "docking_features": np.zeros((2, 3), np.float32),
            "complex_code": np.array([7, 9]),
            "sample_id": np.array([11, 12]),
        },
    )
    assert batch.num_graphs == 2 and batch.num_nodes == 5
    assert batch.batch.tolist() == [0, 0, 0, 1, 1] and batch.ptr.tolist() == [0, 3, 5]
    assert batch.ptr.dtype == torch.long  # PyG's first node of each graph
    assert batch.vdw.tolist() == np.float32([1.2, 1.3, 1.4, 2.0, 2.1]).tolist()
    assert batch.is_ligand.tolist() == [True, False, False, True, False]
    assert batch.edge_index.tolist() == [[0, 2, 4], [2, 0, 3]] and batch.edge_type.dtype == torch.long
    assert batch.y.tolist() == [1, 0] and batch.complex_code.tolist() == [7, 9] and batch.sample_id.tolist() == [11, 12]
