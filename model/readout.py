"""Pieces every graph variant shares: graph counts, the van der Waals node feature and ligand readouts."""

from __future__ import annotations

import torch
from torch import Tensor
from torch_geometric.utils import scatter, softmax

from pecan.data import schema


def graph_count(batch) -> int:
    """Number of graphs in ``batch``, taken from ``pose_features`` so torch.compile keeps it symbolic."""
    pose_features = getattr(batch, "pose_features", None)
    if pose_features is None:
        return batch.num_graphs
    return pose_features.size(0)


def van_der_waals(batch) -> Tensor:
    """Per-atom van der Waals radius (Angstrom): the batch's own ``vdw`` when it has one, else derived from
    the element one-hot of ``x`` (the table in :mod:`pecan.data.layout`)."""
    vdw = getattr(batch, "vdw", None)
    if vdw is not None:
        return vdw.float()
    x = batch.x.float()
    radii = torch.tensor(schema.VDW_RADII, dtype=x.dtype, device=x.device)
    elements = x[:, schema.ELEMENT_FEATURES]
    known = elements.sum(dim=-1)
    return elements @ radii + (1.0 - known.clamp(max=1.0)) * schema.VDW_DEFAULT


def ligand_mean_max(h: Tensor, is_ligand: Tensor, graph: Tensor, num_graphs: int) -> Tensor:
    """Mean and max of ligand-atom features per graph (masks, not boolean indexing: shapes stay static)."""
    ligand = is_ligand.unsqueeze(-1)
    weight = ligand.to(h.dtype)
    count = scatter(weight, graph, dim=0, dim_size=num_graphs, reduce="sum")
    mean = scatter(h * weight, graph, dim=0, dim_size=num_graphs, reduce="sum") / count.clamp_min(1.0)
    # A large finite value, not -inf, keeps the max and its gradient finite.
    ligand_only = h.masked_fill(~ligand, torch.finfo(h.dtype).min)
    maximum = scatter(ligand_only, graph, dim=0, dim_size=num_graphs, reduce="max")
    maximum = torch.where(count > 0, maximum, torch.zeros_like(maximum))
    return torch.cat([mean, maximum], dim=-1)


def ligand_attention(h: Tensor, score: Tensor, is_ligand: Tensor, graph: Tensor, num_graphs: int) -> Tensor:
    """Attention gather over ligand atoms: softmax of ``score`` [N, 1] among each graph's ligand atoms,
    then the weighted sum of ``h``. Protein atoms get weight 0; softmax runs in float32."""
    score = score.float().masked_fill(~is_ligand.unsqueeze(-1), -1e4)
    weight = softmax(score, graph, num_nodes=num_graphs, dim=0) * is_ligand.unsqueeze(-1).float()
    return scatter(h.float() * weight, graph, dim=0, dim_size=num_graphs, reduce="sum")


def with_pose_features(pooled: Tensor, batch, enabled: bool) -> Tensor:
    """Append the pose-level interaction counts as log(1 + n) when enabled."""
    if not enabled:
        return pooled
    pose = torch.log1p(batch.pose_features.float().clamp_min(0.0))
    return torch.cat([pooled.float(), pose.reshape(pooled.size(0), -1)], dim=-1)
