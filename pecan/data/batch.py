"""The batch every reader hands the model: a plain container of the contract's tensors, without PyG.

A ``GraphBatch`` holds one tensor attribute per field of ``pecan.data.schema`` plus the two bookkeeping
vectors PyG's ``Batch`` adds (``batch``: the graph of each node; ``ptr``: each graph's first node) and
``num_graphs``. The models read only these attributes, so any container with them works; this one exists
because importing PyG (``torch_geometric``: its package imports ``torch._dynamo`` and its dataset modules)
costs a process start-up time, paid again by each rank of a job: measured on the 2-core machine, ``pecan
predict`` of a tiny run 3.05 -> 1.57 s, a 2-step training run 3.05 -> 2.67 s (its optimizer imports
``torch._dynamo`` anyway); BENCHMARKS.md, test suite. The training, prediction and scoring paths therefore never
import PyG.

``concat`` is PyG's ``Batch.from_data_list`` for the contract's fields: node, edge and graph fields
concatenated, ``edge_index`` shifted by each sample's first node. ``tests/data/test_batch.py`` checks that the
readers' batches hold exactly the tensors of PyG's ``Batch`` of the same samples, and the models' logits are
equal.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import torch

from pecan.data import schema

_COUNT = "num_graphs"


class GraphBatch:
    """A batch of graphs as the model reads it: one tensor attribute per field (the contract's fields,
    ``batch``, ``ptr``, and whatever a reader attaches, e.g. ``io_counts``) and ``num_graphs``.

    Fields are plain instance attributes (``batch.pos = ...`` replaces one, ``del batch.io_counts`` removes
    one), so ``torch.compile`` reads them like any attribute; ``keys()``, ``in`` and ``batch[name]`` see the
    same set, as on a PyG ``Batch``."""

    def __init__(self, fields: Mapping[str, torch.Tensor], num_graphs: int) -> None:
        self.__dict__.update(fields)
        self.num_graphs = int(num_graphs)

    def keys(self) -> list[str]:
        """The field names (as a PyG Batch lists them: ``num_graphs`` is not a field)."""
        return [name for name in self.__dict__ if name != _COUNT]

    def fields(self) -> dict[str, torch.Tensor]:
        """Every field by name."""
        return {name: self.__dict__[name] for name in self.keys()}

    def __contains__(self, name: object) -> bool:
        return name != _COUNT and name in self.__dict__

    def __getitem__(self, name: str) -> torch.Tensor:
        if name not in self:
            raise KeyError(name)
        return self.__dict__[name]

    def __setitem__(self, name: str, value: torch.Tensor) -> None:
        setattr(self, name, value)

    @property
    def num_nodes(self) -> int:
        """Atoms in the batch (rows of ``x``)."""
        return int(self.x.size(0))

    def apply(self, function) -> "GraphBatch":
        """A new batch of ``function(tensor)`` for every field."""
        return GraphBatch({name: function(value) for name, value in self.fields().items()}, self.num_graphs)

    def to(self, device, non_blocking: bool = False) -> "GraphBatch":
        """The batch on ``device``."""
        return self.apply(lambda value: value.to(device, non_blocking=non_blocking))

    def pin_memory(self) -> "GraphBatch":
        """The batch in page-locked memory (the DataLoader's pin step calls it when no worker does)."""
        return self.apply(lambda value: value.pin_memory())

    def __repr__(self) -> str:
        shapes = ", ".join(f"{name}={list(value.shape)}" for name, value in self.fields().items())
        return f"GraphBatch(num_graphs={self.num_graphs}, {shapes})"


def with_bookkeeping(fields: Mapping[str, torch.Tensor], counts: torch.Tensor) -> GraphBatch:
    """A batch of ``fields`` (already concatenated) with ``batch`` and ``ptr`` from the atoms per graph."""
    return GraphBatch(
        {
            **fields,
            "batch": torch.repeat_interleave(torch.arange(len(counts)), counts),
            "ptr": torch.cat([torch.zeros(1, dtype=torch.long), torch.cumsum(counts, 0)]),
        },
        len(counts),
    )


def concat(samples: Sequence[GraphBatch]) -> GraphBatch:
    """The samples (one-graph batches of the contract's fields) as one batch: what PyG's
    ``Batch.from_data_list`` makes of the same tensors. No samples: an empty batch of 0 graphs."""
    if not samples:
        return GraphBatch({}, 0)
    counts = torch.tensor([sample.num_nodes for sample in samples], dtype=torch.long)
    fields = {}
    for name in samples[0].keys():
        if name == "edge_index":
            starts = torch.cumsum(counts, 0) - counts
            fields[name] = torch.cat([s.edge_index + int(start) for s, start in zip(samples, starts)], dim=1)
        elif name in schema.BY_NAME:
            fields[name] = torch.cat([s[name] for s in samples])
        else:
            raise ValueError(f"field {name!r} is not in the model-input contract (pecan.data.schema)")
    return with_bookkeeping(fields, counts)
