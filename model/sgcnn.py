"""Spatial graph CNN in the PotentialNet style of LLNL FAST: a covalent stage over short edges, a gather,
a non-covalent stage over the radius graph, then an attention gather over ligand atoms."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor, nn
from torch_geometric.nn import MessagePassing

from model.readout import GaussianDistanceExpansion, graph_count, ligand_attention, with_pose_features
from model.settings import setting, settings_from


@dataclass
class SGCNNConfig:
    """Keys of the ``sgcnn`` variant (FAST's defaults)."""

    covalent_cutoff: float = setting("Covalent-stage edges: same-molecule pairs closer than this (Angstrom).", 1.5)
    noncovalent_cutoff: float = setting(
        "Non-covalent-stage edges: any pair closer than this (Angstrom); at most data.edge_cutoff.", 7.5
    )
    covalent_gather_width: int = setting("Node width of the covalent stage and of its gather.", 128)
    noncovalent_gather_width: int = setting("Node width of the non-covalent stage and of the ligand gather.", 128)
    covalent_steps: int = setting("Propagation steps of the covalent stage.", 1)
    noncovalent_steps: int = setting("Propagation steps of the non-covalent stage.", 1)
    rbf: int = setting("Gaussians expanding each edge length for the edge networks.", 16)
    use_vdw: bool = setting("Append the per-atom van der Waals radius to the node features.", True)
    use_pose_features: bool = setting("Feed the 5 interaction counts to the classifier head.", True)
    dropout: float = setting("Dropout in the classifier head.", 0.0)

    def problems(self, config) -> list[tuple[str, str]]:
        """(key, message) for every value this variant cannot run with, given the whole run config."""
        out = []
        if not 0 < self.covalent_cutoff <= self.noncovalent_cutoff:
            out.append(("model.covalent_cutoff", "must be > 0 and <= model.noncovalent_cutoff"))
        if self.noncovalent_cutoff > config.data.edge_cutoff:
            out.append(
                (
                    "model.noncovalent_cutoff",
                    f"{self.noncovalent_cutoff} exceeds data.edge_cutoff "
                    f"{config.data.edge_cutoff}: the radius graph has no longer edges; raise data.edge_cutoff",
                )
            )
        for key in ("covalent_gather_width", "noncovalent_gather_width", "covalent_steps", "noncovalent_steps", "rbf"):
            if getattr(self, key) < 1:
                out.append((f"model.{key}", "must be >= 1"))
        if not 0.0 <= self.dropout < 1.0:
            out.append(("model.dropout", "must be in [0, 1)"))
        return out


class GatedEdgeConv(MessagePassing):
    r"""One gated graph convolution whose messages are filtered by an edge network on the distance:

    .. math::
        \mathbf{m}_i = \sum_{j \in \mathcal{N}(i)} f_\theta(\mathrm{RBF}(d_{ij}), \mathbf{a}_{ij})
            \odot W \mathbf{h}_j, \qquad \mathbf{h}_i \leftarrow \mathrm{GRU}(\mathbf{m}_i, \mathbf{h}_i)

    The edge network yields a per-channel filter (a diagonal edge matrix): FAST's full matrix costs
    width² floats per edge, which on a 7.5 Angstrom radius graph dominates memory. Sums run in float32.
    """

    def __init__(self, width: int, rbf: int, cutoff: float, edge_types: int) -> None:
        super().__init__(aggr="add")
        self.distance_expansion = GaussianDistanceExpansion(rbf, cutoff)
        self.edge_type_embedding = nn.Embedding(edge_types, 8)
        self.edge_network = nn.Sequential(nn.Linear(rbf + 8, width), nn.SiLU(), nn.Linear(width, width))
        self.linear = nn.Linear(width, width, bias=False)
        self.gru = nn.GRUCell(width, width)

    def forward(self, h: Tensor, edge_index: Tensor, distance: Tensor, edge_type: Tensor) -> Tensor:
        """Return the updated node features (float32)."""
        expansion = self.distance_expansion(distance)
        edge_filter = self.edge_network(torch.cat([expansion, self.edge_type_embedding(edge_type)], dim=-1))
        messages = self.propagate(edge_index, h=self.linear(h), edge_filter=edge_filter)
        return self.gru(messages.float(), h.float()).float()

    def message(self, h_j: Tensor, edge_filter: Tensor) -> Tensor:
        """Filter the neighbour's features with the edge network's output."""
        return (edge_filter * h_j).float()


class GatedGather(nn.Module):
    r"""PotentialNet's gather between stages: :math:`\sigma(i([\mathbf{h}, \mathbf{x}])) \odot j(\mathbf{h})`,
    mixing the stage's output with its input features."""

    def __init__(self, hidden: int, inputs: int, width: int) -> None:
        super().__init__()
        self.gate = nn.Linear(hidden + inputs, width)
        self.value = nn.Linear(hidden, width)

    def forward(self, h: Tensor, x: Tensor) -> Tensor:
        """Return the gathered node features."""
        return torch.sigmoid(self.gate(torch.cat([h, x], dim=-1))) * self.value(h)


class SGCNNClassifier(nn.Module):
    """Scores a docked pose with the two-stage spatial graph CNN.

    Both edge sets come from the batch's radius graph, filtered by distance in the model: covalent edges are
    same-molecule pairs (edge types 0 and 2) under ``covalent_cutoff``, non-covalent edges every pair under
    ``noncovalent_cutoff``. Input: a PyG Batch with ``x``, ``pos``, ``edge_index``, ``edge_type``,
    ``vdw``, ``is_ligand``, ``batch`` and ``pose_features``. Output: float32 logits [B].
    """

    def __init__(self, cfg: SGCNNConfig, in_features: int, edge_types: int, pose_features: int) -> None:
        super().__init__()
        self.cfg = cfg
        inputs = in_features + (1 if cfg.use_vdw else 0)
        covalent, noncovalent = cfg.covalent_gather_width, cfg.noncovalent_gather_width
        self.embedding = nn.Linear(inputs, covalent)
        self.covalent = nn.ModuleList(
            GatedEdgeConv(covalent, cfg.rbf, cfg.covalent_cutoff, edge_types) for _ in range(cfg.covalent_steps)
        )
        self.covalent_gather = GatedGather(covalent, inputs, noncovalent)
        self.noncovalent = nn.ModuleList(
            GatedEdgeConv(noncovalent, cfg.rbf, cfg.noncovalent_cutoff, edge_types)
            for _ in range(cfg.noncovalent_steps)
        )
        self.attention = nn.Linear(noncovalent, 1)
        self.ligand_gather = nn.Linear(noncovalent, noncovalent)
        head_input = noncovalent + (pose_features if cfg.use_pose_features else 0)
        self.head = nn.Sequential(
            nn.Linear(head_input, noncovalent // 2 or 1),
            nn.SiLU(),
            nn.Dropout(cfg.dropout),
            nn.Linear(noncovalent // 2 or 1, 1),
        )

    def node_inputs(self, batch) -> Tensor:
        """The atom features, plus the van der Waals radius when enabled."""
        x = batch.x.float()
        if self.cfg.use_vdw:
            x = torch.cat([x, batch.vdw.float().unsqueeze(-1)], dim=-1)
        return x

    def edge_sets(self, batch) -> tuple[tuple[Tensor, Tensor, Tensor], tuple[Tensor, Tensor, Tensor]]:
        """(edge_index, distance, edge_type) of the covalent and of the non-covalent stage."""
        edge_index, edge_type = batch.edge_index, batch.edge_type
        pos = batch.pos.float()
        distance = (pos[edge_index[1]] - pos[edge_index[0]]).norm(dim=-1)
        covalent = (distance < self.cfg.covalent_cutoff) & (edge_type != 1)
        noncovalent = distance < self.cfg.noncovalent_cutoff
        return (
            (edge_index[:, covalent], distance[covalent], edge_type[covalent]),
            (edge_index[:, noncovalent], distance[noncovalent], edge_type[noncovalent]),
        )

    def embed(self, batch) -> Tensor:
        """Per-atom embeddings after both stages (float32 [N, noncovalent_gather_width])."""
        x = self.node_inputs(batch)
        covalent, noncovalent = self.edge_sets(batch)
        h = self.embedding(x).float()
        for layer in self.covalent:
            h = layer(h, *covalent)
        h = self.covalent_gather(h, x).float()
        for layer in self.noncovalent:
            h = layer(h, *noncovalent)
        return h

    def forward(self, batch) -> Tensor:
        """Return one float32 logit per graph."""
        num_graphs = graph_count(batch)
        h = self.embed(batch)
        pooled = ligand_attention(self.ligand_gather(h), self.attention(h), batch.is_ligand, batch.batch, num_graphs)
        pooled = with_pose_features(pooled, batch, self.cfg.use_pose_features)
        return self.head(pooled).squeeze(-1).float()


def build(cfg, sizes: dict[str, int]) -> SGCNNClassifier:
    """Build an :class:`SGCNNClassifier` from ``cfg``'s :class:`SGCNNConfig` keys and the data's input
    ``sizes`` (``pecan.data.schema.input_sizes``)."""
    return SGCNNClassifier(settings_from(SGCNNConfig, cfg), **sizes)
