"""Gated graph CNN baseline (GatedGraphConv style) over the radius graph, with edge types as edge labels."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor, nn
from torch_geometric.nn import MessagePassing

from model.readout import graph_count, ligand_mean_max, with_pose_features
from model.settings import setting, settings_from


@dataclass
class GGCNNConfig:
    """Keys of the ``ggcnn`` variant."""

    gated_width: int = setting("Node state width of the gated graph convolution.", 64)
    gated_steps: int = setting("Propagation steps (one shared GRU, one weight matrix per edge type).", 3)
    use_vdw: bool = setting("Append the per-atom van der Waals radius to the node features.", False)
    use_pose_features: bool = setting("Feed the 5 interaction counts to the classifier head.", True)
    dropout: float = setting("Dropout in the classifier head.", 0.0)

    def problems(self, config) -> list[tuple[str, str]]:
        """(key, message) for every value this variant cannot run with."""
        out = [(f"model.{k}", "must be >= 1") for k in ("gated_width", "gated_steps") if getattr(self, k) < 1]
        if not 0.0 <= self.dropout < 1.0:
            out.append(("model.dropout", "must be in [0, 1)"))
        return out


class TypedGatedGraphConv(MessagePassing):
    r"""Gated graph convolution (Li et al., "Gated Graph Sequence Neural Networks", ICLR 2016) with one
    weight matrix per edge label, the form of the original GG-NN:

    .. math::
        \mathbf{m}_i = \sum_{j \in \mathcal{N}(i)} W_{t(ij)} \mathbf{h}_j, \qquad
        \mathbf{h}_i \leftarrow \mathrm{GRU}(\mathbf{m}_i, \mathbf{h}_i)

    repeated ``steps`` times with shared weights. Messages are summed in float32.
    """

    def __init__(self, width: int, steps: int, edge_types: int) -> None:
        super().__init__(aggr="add")
        self.width, self.steps, self.edge_types = width, steps, edge_types
        self.weight = nn.Parameter(torch.empty(edge_types, width, width))
        self.gru = nn.GRUCell(width, width)
        nn.init.xavier_uniform_(self.weight.view(-1, width))

    def forward(self, h: Tensor, edge_index: Tensor, edge_type: Tensor) -> Tensor:
        """Return the node states after ``steps`` propagations (float32)."""
        for _ in range(self.steps):
            # Every node's message under every label at once: [N, T * width], picked per edge below.
            transformed = torch.einsum("nc,tcd->ntd", h, self.weight.to(h.dtype)).reshape(h.size(0), -1)
            messages = self.propagate(edge_index, transformed=transformed, edge_type=edge_type)
            h = self.gru(messages.float(), h.float()).float()
        return h

    def message(self, transformed_j: Tensor, edge_type: Tensor) -> Tensor:
        """The source node's features under this edge's label."""
        per_type = transformed_j.view(-1, self.edge_types, self.width)
        return per_type.gather(1, edge_type.view(-1, 1, 1).expand(-1, 1, self.width)).squeeze(1).float()


class GGCNNClassifier(nn.Module):
    """Scores a docked pose with a :class:`TypedGatedGraphConv` and a ligand mean/max readout.

    Input: a PyG Batch with ``x``, ``edge_index``, ``edge_type``, ``is_ligand``, ``batch``,
    ``pose_features``. Output: float32 logits [B]. Distances enter only through the radius graph itself,
    which makes this the geometry-light baseline.
    """

    def __init__(self, cfg: GGCNNConfig, in_features: int, edge_types: int, pose_features: int) -> None:
        super().__init__()
        self.cfg = cfg
        width = cfg.gated_width
        self.embedding = nn.Linear(in_features + (1 if cfg.use_vdw else 0), width)
        self.conv = TypedGatedGraphConv(width, cfg.gated_steps, edge_types)
        head_input = 2 * width + (pose_features if cfg.use_pose_features else 0)
        self.head = nn.Sequential(nn.Linear(head_input, width), nn.SiLU(), nn.Dropout(cfg.dropout), nn.Linear(width, 1))

    def embed(self, batch) -> Tensor:
        """Per-atom states after propagation (float32 [N, gated_width])."""
        x = batch.x.float()
        if self.cfg.use_vdw:
            x = torch.cat([x, batch.vdw.float().unsqueeze(-1)], dim=-1)
        return self.conv(self.embedding(x).float(), batch.edge_index, batch.edge_type)

    def forward(self, batch) -> Tensor:
        """Return one float32 logit per graph."""
        num_graphs = graph_count(batch)
        pooled = ligand_mean_max(self.embed(batch), batch.is_ligand, batch.batch, num_graphs)
        pooled = with_pose_features(pooled, batch, self.cfg.use_pose_features)
        return self.head(pooled).squeeze(-1).float()


def build(cfg, sizes: dict[str, int]) -> GGCNNClassifier:
    """Build a :class:`GGCNNClassifier` from ``cfg``'s :class:`GGCNNConfig` keys and the data's input
    ``sizes`` (``pecan.data.schema.input_sizes``: the edge labels are the contract's edge types)."""
    return GGCNNClassifier(settings_from(GGCNNConfig, cfg), **sizes)
