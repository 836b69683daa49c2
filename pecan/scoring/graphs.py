"""Converted poses -> model batches for `pecan score`, without PyG: the data path's graph builder
(``pecan.data.graph.build_graph``) and sample fields (``pecan.data.sample.SampleTable``), concatenated the way
the packed reader concatenates them (``pecan.data.packed.gather_batch``), into a ``GraphBatch``
(``pecan.data.batch``, the readers' batch) that carries the model-input contract's fields (``pecan.data.schema``).

``tests/scoring/test_graphs.py`` checks that a ``GraphBatch`` holds the same tensors as PyG's ``Batch`` of the
HDF5 reader's samples of the same poses, and that the model's logits are equal.
"""

from __future__ import annotations

from typing import Iterator, Optional

import numpy as np
import torch

from pecan.data import schema
from pecan.data.batch import GraphBatch
from pecan.data.geometry import check_pose_features
from pecan.data.graph import AtomGraph, build_graph
from pecan.data.sample import SampleTable


def pose_graph(atoms: np.ndarray, vdw: Optional[np.ndarray], data, where: str) -> AtomGraph:
    """One converted pose's graph, exactly as the HDF5 reader builds it from the shard the converter writes:
    the atoms as float32, the pocket crop, the radius edges, the data section's size limits. A DataError
    names ``where``."""
    atoms = np.asarray(atoms, dtype=np.float32)
    vdw = None if vdw is None else np.asarray(vdw, dtype=np.float32)
    return build_graph(atoms, data.pocket_radius, data.edge_cutoff, where, data.max_atoms, data.max_edges, vdw=vdw)


def checked_pose_features(table: SampleTable, i: int) -> np.ndarray:
    """Row ``i``'s interaction counts, checked as the reader checks them (finite, bounded)."""
    return check_pose_features(table.pose_features[i].astype(np.float64), table.where(i))


def collate(graphs: list[AtomGraph], table: SampleTable, rows: np.ndarray) -> GraphBatch:
    """The batch of ``graphs`` (of index rows ``rows`` of ``table``), equal to PyG's ``Batch.from_data_list``
    of the reader's samples: node and edge fields concatenated, edge ends shifted by each graph's first node,
    the sample fields stacked."""
    counts = np.array([g.num_nodes for g in graphs], dtype=np.int64)
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
    arrays: dict[str, np.ndarray] = {}
    for field in schema.FIELDS:
        if field.source != "graph":
            continue
        if field.name == "edge_index":
            arrays[field.name] = np.concatenate([g.edge_index + s for g, s in zip(graphs, starts)], axis=1)
        else:
            arrays[field.name] = np.concatenate([getattr(g, field.name) for g in graphs])
    values = table.sample_field_values(rows)
    fields = schema.tensors({**arrays, **values}, num_graphs=len(graphs))
    counts_t = torch.from_numpy(counts)
    fields["batch"] = torch.repeat_interleave(torch.arange(len(graphs)), counts_t)
    fields["ptr"] = torch.cat([torch.zeros(1, dtype=torch.long), torch.cumsum(counts_t, 0)])
    return GraphBatch(fields, len(graphs))


def batches(graphs: list[AtomGraph], table: SampleTable, rows: np.ndarray, size: int) -> Iterator[GraphBatch]:
    """``collate`` of consecutive runs of ``size`` graphs."""
    for start in range(0, len(graphs), size):
        yield collate(graphs[start : start + size], table, rows[start : start + size])
