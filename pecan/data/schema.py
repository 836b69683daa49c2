"""The model-input contract: every tensor a batch carries (name, dtype, per node/edge/graph) and the input sizes.

A leaf module: numpy at import, torch only inside the functions that build tensors, so that the config (which
reads the feature layout through ``pecan.data.layout``) stays free of torch. The readers
(``h5dataset.graph_to_data``, ``packed.to_batch``), the worker hand-over (``loader.WIRE_FIELDS``), the pack
layout and every model take their fields and sizes from here, so they stay in step by construction;
``tests/data/test_schema.py`` checks that each reader produces exactly these fields with these dtypes.

Adding a tensor field is a row in ``FIELDS``, plus the code that computes its values; no reader, pack or
hand-over list changes. Its ``source`` says where the values come from:

- ``"graph"``: an array the graph builder computes per sample: an attribute of the same name on
  ``pecan.data.graph.AtomGraph``, set in ``build_graph``. The pack writer stores it (as ``stored``) and the
  gather slices it by this table. Bump ``packed.PACK_VERSION`` so that older packs are rebuilt.
- ``"sample"``: a per-graph value of the index, from ``pecan.data.sample.SampleTable.sample_field_values`` (the one
  place both readers take them from).
- ``"derived"``: computed from the other fields in ``derive`` below.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Mapping, Optional

import numpy as np

if TYPE_CHECKING:
    import torch

# ---------------------------------------------------------------------------- input sizes and meanings
N_ATOM_FEATURES = 19
"""Per-atom features: the shard's columns 3..21 (9 element bits, hybridisation, bonds, ..., molcode, charge)."""
MOLCODE_FEATURE = 13
"""Position of molcode (+1 ligand, -1 protein) inside the atom features."""
ELEMENT_FEATURES = slice(0, 9)
"""Element one-hot inside the atom features: B, C, N, O, P, S, Se, halogen, metal."""
VDW_RADII = (1.92, 1.70, 1.55, 1.52, 1.80, 1.80, 1.90, 1.75, 2.00)
"""Bondi radii (Angstrom) of the element bits; halogen uses Cl, metal a typical 2.0."""
VDW_DEFAULT = 1.70
"""Radius of an atom with no element bit (carbon's)."""
POSE_FEATURES = ("num_hbonds", "hpbond", "habond", "sbond", "pbond")
"""Per-pose interaction counts, in the order of ``pose_features``."""
N_POSE_FEATURES = len(POSE_FEATURES)
DOCKING_FEATURES = ("score / 10", "gap to the complex's best score / 5, in [0, 4]", "score missing")
"""Per-pose docking-score inputs, in the order of ``docking_features`` (pecan.data.sample.docking_features)."""
N_DOCKING_FEATURES = len(DOCKING_FEATURES)
LIGAND_LIGAND, LIGAND_PROTEIN, PROTEIN_PROTEIN = 0, 1, 2
EDGE_TYPES = ("ligand-ligand", "ligand-protein", "protein-protein")
"""Edge type names, by value of ``edge_type``."""
N_EDGE_TYPES = len(EDGE_TYPES)


def input_sizes() -> dict[str, int]:
    """The sizes a model's input layers take from the data."""
    return {"in_features": N_ATOM_FEATURES, "edge_types": N_EDGE_TYPES, "pose_features": N_POSE_FEATURES}


# ---------------------------------------------------------------------------- the batch fields
@dataclass(frozen=True)
class Field:
    """One tensor of the model input."""

    name: str
    dtype: str  # torch dtype name: float32, int64, bool
    per: str  # "node", "edge" or "graph": the dimension that grows with the batch
    width: tuple[int, ...]  # trailing shape per node/edge/graph; edge_index is (2, E): width (2,) leading
    source: str  # "graph", "sample" or "derived" (see the module docstring)
    doc: str
    stored: Optional[str] = None  # numpy dtype a pack keeps a "graph" field in (None: the dtype itself)


FIELDS: tuple[Field, ...] = (
    Field("x", "float32", "node", (N_ATOM_FEATURES,), "graph", "atom features"),
    Field("pos", "float32", "node", (3,), "graph", "coordinates (Angstrom)"),
    Field("vdw", "float32", "node", (), "graph", "van der Waals radius (Angstrom)"),
    Field("is_ligand", "bool", "node", (), "derived", "ligand atom (molcode +1)"),
    Field("edge_index", "int64", "edge", (2,), "graph", "(source, target) node ids, sorted by target"),
    Field("edge_type", "int64", "edge", (), "graph", "EDGE_TYPES value", stored="int8"),
    Field("y", "float32", "graph", (), "sample", "label: 1 near-native, 0 decoy"),
    Field("pose_features", "float32", "graph", (N_POSE_FEATURES,), "sample", "interaction counts"),
    Field(
        "docking_features",
        "float32",
        "graph",
        (N_DOCKING_FEATURES,),
        "sample",
        "docking score inputs (model.use_docking_score); all-missing without a docking_score column",
    ),
    Field(
        "complex_code",
        "int64",
        "graph",
        (),
        "sample",
        "the pose's complex as a number within its index (top-1 success and the ranking loss group by it)",
    ),
    Field("sample_id", "int64", "graph", (), "sample", "row of the index"),
)
BY_NAME = {f.name: f for f in FIELDS}
NAMES = tuple(f.name for f in FIELDS)
BATCH_VECTORS = ("batch", "ptr")
"""PyG's own int64 bookkeeping of a Batch: graph of each node, first node of each graph."""


def graph_arrays(per: str) -> tuple[Field, ...]:
    """Fields the graph builder computes per ``per`` ("node" or "edge"), except the edge list itself."""
    return tuple(f for f in FIELDS if f.source == "graph" and f.per == per and f.name != "edge_index")


def graph_field_values(graph) -> dict[str, np.ndarray]:
    """The "graph" fields of one built graph (an object with an attribute per field, e.g. AtomGraph)."""
    return {f.name: getattr(graph, f.name) for f in FIELDS if f.source == "graph"}


def torch_dtype(field: Field):
    """The field's dtype as a torch.dtype."""
    import torch

    return getattr(torch, field.dtype)


def derive(tensors: Mapping[str, "torch.Tensor"]) -> dict[str, "torch.Tensor"]:
    """The "derived" fields, computed from the others."""
    return {"is_ligand": tensors["x"][:, MOLCODE_FEATURE] > 0}


def tensors(arrays: Mapping[str, np.ndarray], num_graphs: int) -> dict[str, "torch.Tensor"]:
    """Every contract field as a tensor of its dtype and shape, from numpy arrays of the "graph" and "sample"
    fields (``num_graphs`` graphs; a graph field may come flat). A missing field is a KeyError naming it."""
    import torch

    out = {}
    for field in FIELDS:
        if field.source == "derived":
            continue
        value = torch.as_tensor(np.asarray(arrays[field.name])).to(torch_dtype(field))
        out[field.name] = value.reshape(num_graphs, *field.width) if field.per == "graph" else value
    out.update(derive(out))
    return out


def check(batch) -> list[str]:
    """How ``batch`` departs from the contract (missing or extra fields, wrong dtype or width); empty if none."""
    present = set(batch.keys()) - set(BATCH_VECTORS)
    problems = [f"missing field {name}" for name in NAMES if name not in present]
    problems += [f"field {name} is not in the contract" for name in sorted(present - set(NAMES))]
    for field in FIELDS:
        if field.name not in present:
            continue
        value = batch[field.name]
        shape = tuple(value.shape[:1]) if field.name == "edge_index" else tuple(value.shape[1:])
        if value.dtype != torch_dtype(field) or shape != field.width:
            problems.append(
                f"field {field.name}: {value.dtype} {tuple(value.shape)}, contract {field.dtype} "
                f"[{field.per}, {', '.join(map(str, field.width))}]"
            )
    return problems
