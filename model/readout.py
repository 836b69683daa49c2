"""Pieces the variants share, each implemented once: the graph count, the distance expansion, the ligand
readouts and the pose-feature append.

Every batch carries the fields of the model-input contract (``pecan.data.schema.FIELDS``: ``vdw`` and
``pose_features`` included), so these read them directly.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

UNDERFLOW = -87.0
"""exp(-87) = 1.6e-38, just above float32's smallest normal number."""


def graph_count(batch) -> int:
    """Number of graphs in ``batch``, taken from ``pose_features`` so torch.compile keeps it symbolic."""
    return batch.pose_features.size(0)


class GaussianDistanceExpansion(nn.Module):
    r"""Expands interatomic distances on Gaussians with centres evenly spaced in
    :math:`[0, \text{cutoff}]`, each as wide as the spacing :math:`s`:
    :math:`\exp(-(d - \mu_k)^2 / 2s^2)`.

    PyG's ``GaussianSmearing`` computes the same function, but keeps its centres in the state dict (so
    checkpoints would gain a key), cannot make a single Gaussian (``rbf: 1`` is a valid setting) and takes
    its width from the float32 centres, which moves it by an ulp at some sizes.

    Args:
        count (int): number of Gaussians.
        cutoff (float): largest centre, in Angstrom.

    Shapes:
        - **input:** distances :math:`(E,)`
        - **output:** expansion :math:`(E, \text{count})`
    """

    def __init__(self, count: int, cutoff: float) -> None:
        super().__init__()
        self.register_buffer("centres", torch.linspace(0.0, cutoff, count), persistent=False)
        spacing = cutoff / max(count - 1, 1)
        self.coefficient = -0.5 / spacing**2

    def forward(self, distance: Tensor) -> Tensor:
        """Return the Gaussian expansion of each distance."""
        exponent = self.coefficient * (distance.unsqueeze(-1) - self.centres) ** 2
        # Below UNDERFLOW the Gaussian is under 2e-38, a float32 subnormal: it is set to 0 rather than evaluated,
        # as x86's vectorised exp takes a slow path on arguments whose result underflows (~30x slower, and a
        # distant edge has most of its Gaussians there).
        return torch.where(exponent < UNDERFLOW, 0.0, torch.exp(exponent.clamp_min(UNDERFLOW)))


def ligand_mean_max(h: Tensor, is_ligand: Tensor, graph: Tensor, num_graphs: int) -> Tensor:
    """Concatenate the mean and the max of ligand-atom features per graph.

    Masks instead of boolean indexing keep shapes independent of the data, so the readout compiles once
    for dynamic shapes; a graph without ligand atoms pools to zeros. Plain torch reductions rather than
    PyG's ``scatter``: on CUDA with gradients PyG switches its max to torch-scatter when that is installed
    (and warns when it is not), and the result should not depend on which extensions are present.
    """
    ligand = is_ligand.unsqueeze(-1)
    weight = ligand.to(h.dtype)
    ligand_count = weight.new_zeros(num_graphs, 1).index_add_(0, graph, weight)
    mean = h.new_zeros(num_graphs, h.size(1)).index_add_(0, graph, h * weight)
    mean = mean / ligand_count.clamp_min(1.0)
    # A large finite value, not -inf: the max then stays finite and its gradient well defined.
    ligand_only = h.masked_fill(~ligand, torch.finfo(h.dtype).min)
    index = graph.unsqueeze(-1).expand_as(ligand_only)
    maximum = h.new_zeros(num_graphs, h.size(1)).scatter_reduce_(
        0, index, ligand_only, reduce="amax", include_self=False
    )
    maximum = torch.where(ligand_count > 0, maximum, torch.zeros_like(maximum))
    return torch.cat([mean, maximum], dim=-1)


def ligand_attention(h: Tensor, score: Tensor, is_ligand: Tensor, graph: Tensor, num_graphs: int) -> Tensor:
    """Attention gather over ligand atoms: softmax of ``score`` [N, 1] among each graph's ligand atoms,
    then the weighted sum of ``h``. Protein atoms get weight 0; softmax runs in float32."""
    score = score.float().masked_fill(~is_ligand.unsqueeze(-1), -1e4)
    weight = group_softmax(score, graph, num_graphs) * is_ligand.unsqueeze(-1).float()
    values = h.float() * weight
    return values.new_zeros(num_graphs, values.size(1)).index_add_(0, graph, values)


def group_softmax(score: Tensor, graph: Tensor, num_graphs: int) -> Tensor:
    """Softmax of ``score`` [N, C] among the rows of each graph (``graph`` [N] the graph of each row), as PyG's
    ``softmax`` computes it (the group's maximum subtracted, 1e-16 added to the sum) in plain torch, so that
    scoring imports no PyG."""
    index = graph.unsqueeze(-1).expand_as(score)
    maximum = score.new_zeros(num_graphs, score.size(1)).scatter_reduce_(
        0, index, score.detach(), reduce="amax", include_self=False
    )
    exp = (score - maximum.index_select(0, graph)).exp()
    total = exp.new_zeros(num_graphs, score.size(1)).index_add_(0, graph, exp) + 1e-16
    return exp / total.index_select(0, graph)


def with_pose_features(pooled: Tensor, batch, enabled: bool) -> Tensor:
    """Append the pose-level interaction counts as log(1 + n) when enabled."""
    if not enabled:
        return pooled
    pose = torch.log1p(batch.pose_features.float().clamp_min(0.0))
    return torch.cat([pooled.float(), pose.reshape(pooled.size(0), -1)], dim=-1)
