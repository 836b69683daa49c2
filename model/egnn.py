"""E(n)-equivariant graph neural network that scores docked protein-ligand poses."""

from __future__ import annotations

import torch
from torch import Tensor, nn
from torch_geometric.nn import MessagePassing
from torch_geometric.utils import scatter


class GaussianDistanceExpansion(nn.Module):
    r"""Expands interatomic distances on Gaussians with centres evenly spaced in
    :math:`[0, \text{cutoff}]`.

    Args:
        count (int): number of Gaussians. (default: :obj:`16`)
        cutoff (float): largest centre, in Angstrom. (default: :obj:`6.0`)

    Shapes:
        - **input:** distances :math:`(E,)`
        - **output:** expansion :math:`(E, \text{count})`
    """

    def __init__(self, count: int = 16, cutoff: float = 6.0) -> None:
        super().__init__()
        self.register_buffer("centres", torch.linspace(0.0, cutoff, count), persistent=False)
        spacing = cutoff / max(count - 1, 1)
        self.coefficient = -0.5 / spacing**2

    def forward(self, distance: Tensor) -> Tensor:
        """Return the Gaussian expansion of each distance."""
        return torch.exp(self.coefficient * (distance.unsqueeze(-1) - self.centres) ** 2)


class EGNNLayer(MessagePassing):
    r"""The E(n)-equivariant graph convolution from Satorras, Hoogeboom and Welling,
    `"E(n) Equivariant Graph Neural Networks" <https://arxiv.org/abs/2102.09844>`_
    (ICML 2021), with edge types and a radial basis expansion of the distance.

    .. math::
        \mathbf{m}_{ij} &= \phi_e\left(\mathbf{h}_i, \mathbf{h}_j,
            \|\mathbf{x}_i - \mathbf{x}_j\|^2 / c^2,
            \mathrm{RBF}(\|\mathbf{x}_i - \mathbf{x}_j\|), \mathbf{a}_{ij}\right)

        e_{ij} &= \sigma\left(\phi_{inf}(\mathbf{m}_{ij})\right)
            \quad \text{(only with attention, else } e_{ij} = 1\text{)}

        \mathbf{h}_i &\leftarrow \mathrm{LayerNorm}\left(\mathbf{h}_i +
            \phi_h\left(\mathbf{h}_i, \textstyle\sum_{j \in \mathcal{N}(i)}
            e_{ij}\mathbf{m}_{ij}\right)\right)

        \mathbf{x}_i &\leftarrow \mathbf{x}_i + C \frac{1}{|\mathcal{N}(i)|}
            \sum_{j \in \mathcal{N}(i)}
            \frac{\mathbf{x}_i - \mathbf{x}_j}{\|\mathbf{x}_i - \mathbf{x}_j\| + \epsilon}
            \tanh\left(\phi_x(\mathbf{m}_{ij})\right)
            \quad \text{(only with update\_coords)}

    where :math:`\mathbf{a}_{ij}` is a learned embedding of the edge type and :math:`c` the
    cutoff. Every input to :math:`\phi_e` is a function of distances only, so node features are
    E(n)-invariant and the coordinate update is E(n)-equivariant. Normalising the direction,
    bounding it with :math:`\tanh` and averaging over neighbours caps a layer's move at
    :math:`C` Angstrom, which keeps deep stacks stable on dense pockets.

    Messages are aggregated in float32 whatever the autocast dtype: a sum over a hundred
    neighbours loses too many digits in bfloat16.

    Args:
        hidden (int): size of node features :math:`\mathbf{h}`. (default: :obj:`64`)
        edge_types (int): number of edge types. (default: :obj:`3`)
        rbf (int): number of Gaussians in the distance expansion. (default: :obj:`16`)
        cutoff (float): edge cutoff in Angstrom; scales distances. (default: :obj:`6.0`)
        attention (bool): gate each message with :math:`e_{ij}`. (default: :obj:`True`)
        update_coords (bool): also update coordinates. (default: :obj:`False`)
        coords_weight (float): :math:`C`, the largest move per layer in Angstrom.
            (default: :obj:`1.0`)
        edge_embedding (int): size of the edge-type embedding :math:`\mathbf{a}_{ij}`.
            (default: :obj:`16`)
        dropout (float): dropout on the node update. (default: :obj:`0.0`)
        epsilon (float): :math:`\epsilon` in the direction normalisation. (default: :obj:`1e-6`)

    Shapes:
        - **input:** node features :math:`(N, \text{hidden})`, positions :math:`(N, 3)`,
          edge indices :math:`(2, E)`, edge types :math:`(E,)`
        - **output:** node features :math:`(N, \text{hidden})` and positions :math:`(N, 3)`
          (float32; unchanged without update_coords)
    """

    def __init__(
        self,
        hidden: int = 64,
        edge_types: int = 3,
        rbf: int = 16,
        cutoff: float = 6.0,
        attention: bool = True,
        update_coords: bool = False,
        coords_weight: float = 1.0,
        edge_embedding: int = 16,
        dropout: float = 0.0,
        epsilon: float = 1e-6,
    ) -> None:
        super().__init__(aggr="add")
        self.hidden = hidden
        self.cutoff = cutoff
        self.attention = attention
        self.update_coords = update_coords
        self.coords_weight = coords_weight
        self.epsilon = epsilon

        self.edge_type_embedding = nn.Embedding(edge_types, edge_embedding)
        self.distance_expansion = GaussianDistanceExpansion(rbf, cutoff)
        self.edge_mlp = nn.Sequential(
            nn.Linear(2 * hidden + 1 + rbf + edge_embedding, hidden),
            nn.SiLU(),
            nn.Linear(hidden, hidden),
            nn.SiLU(),
        )
        self.gate = nn.Linear(hidden, 1) if attention else None
        self.node_mlp = nn.Sequential(
            nn.Linear(2 * hidden, hidden),
            nn.SiLU(),
            nn.Dropout(dropout),
            nn.Linear(hidden, hidden),
        )
        self.norm = nn.LayerNorm(hidden)
        if update_coords:
            self.coordinate_mlp = nn.Sequential(
                nn.Linear(hidden, hidden),
                nn.SiLU(),
                nn.Linear(hidden, 1, bias=False),
            )
        else:
            self.coordinate_mlp = None
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Re-initialise all learnable parameters."""
        super().reset_parameters()
        self.edge_type_embedding.reset_parameters()
        modules = [self.edge_mlp, self.node_mlp, self.gate, self.coordinate_mlp]
        for module in modules:
            if module is None:
                continue
            for layer in module.modules():
                if isinstance(layer, nn.Linear):
                    layer.reset_parameters()
        self.norm.reset_parameters()
        if self.coordinate_mlp is not None:
            # Start close to a zero move, as in the paper, so early training does not scramble
            # the pose it is asked to judge.
            nn.init.xavier_uniform_(self.coordinate_mlp[-1].weight, gain=0.001)

    def forward(
        self, h: Tensor, pos: Tensor, edge_index: Tensor, edge_type: Tensor
    ) -> tuple[Tensor, Tensor]:
        """Return updated node features and positions."""
        pos = pos.float()
        source, target = edge_index[0], edge_index[1]
        # Flow is source -> target, so x_i is the target and x_j the source.
        difference = pos[target] - pos[source]
        squared_distance = (difference * difference).sum(dim=-1, keepdim=True)
        distance = squared_distance.clamp_min(1e-12).sqrt()
        edge_features = torch.cat(
            [
                squared_distance / self.cutoff**2,
                self.distance_expansion(distance.squeeze(-1)),
                self.edge_type_embedding(edge_type).float(),
            ],
            dim=-1,
        )
        direction = difference / (distance + self.epsilon)

        aggregated = self.propagate(
            edge_index, h=h, edge_features=edge_features, direction=direction
        )
        message_sum = aggregated[:, : self.hidden]
        h = self.norm(h + self.node_mlp(torch.cat([h, message_sum], dim=-1)))

        if self.update_coords:
            neighbour_count = scatter(
                torch.ones_like(distance), target, dim=0, dim_size=pos.size(0), reduce="sum"
            ).clamp_min(1.0)
            pos = pos + self.coords_weight * aggregated[:, self.hidden :] / neighbour_count
        return h, pos

    def message(self, h_i: Tensor, h_j: Tensor, edge_features: Tensor, direction: Tensor) -> Tensor:
        """Return the gated message, followed by the coordinate move when enabled."""
        features = torch.cat([h_i, h_j, edge_features], dim=-1)
        message = self.edge_mlp(features)
        if self.gate is not None:
            message = message * torch.sigmoid(self.gate(message))
        message = message.float()
        if self.coordinate_mlp is None:
            return message
        move = direction * torch.tanh(self.coordinate_mlp(message).float())
        return torch.cat([message, move], dim=-1)

    def aggregate(
        self,
        inputs: Tensor,
        index: Tensor,
        ptr: Tensor | None = None,
        dim_size: int | None = None,
    ) -> Tensor:
        """Sum messages per target node in float32."""
        return super().aggregate(inputs.float(), index, ptr=ptr, dim_size=dim_size)

    def __repr__(self) -> str:
        return (
            f"{self.__class__.__name__}({self.hidden}, attention={self.attention}, "
            f"update_coords={self.update_coords})"
        )


class EGNNClassifier(nn.Module):
    r"""Scores a docked pose as near-native (logit > 0) or decoy with a stack of
    :class:`EGNNLayer` and a ligand-only readout.

    Protein atoms shape the ligand atoms' features through ligand-protein edges, but only
    ligand atoms are pooled (mean and max), so the far side of the pocket cannot outvote the
    pose. Pose-level interaction counts are appended as :math:`\log(1 + n)`.

    Args:
        in_features (int): per-atom input features. (default: :obj:`19`)
        hidden (int): node feature size. (default: :obj:`64`)
        layers (int): number of :class:`EGNNLayer`. (default: :obj:`4`)
        edge_types (int): number of edge types. (default: :obj:`3`)
        rbf (int): Gaussians in the distance expansion. (default: :obj:`16`)
        cutoff (float): edge cutoff in Angstrom. (default: :obj:`6.0`)
        attention (bool): gated messages. (default: :obj:`True`)
        update_coords (bool): layers also move coordinates. (default: :obj:`False`)
        pose_features (int): size of ``batch.pose_features``. (default: :obj:`5`)
        use_pose_features (bool): feed pose features to the head. (default: :obj:`True`)
        dropout (float): dropout in the layers and the head. (default: :obj:`0.0`)

    Shapes:
        - **input:** a :class:`torch_geometric.data.Batch` with ``x`` :math:`(N, F)`,
          ``pos`` :math:`(N, 3)`, ``edge_index`` :math:`(2, E)`, ``edge_type`` :math:`(E,)`,
          ``is_ligand`` :math:`(N,)`, ``batch`` :math:`(N,)`, ``pose_features`` :math:`(B, P)`
        - **output:** float32 logits :math:`(B,)`
    """

    def __init__(
        self,
        in_features: int = 19,
        hidden: int = 64,
        layers: int = 4,
        edge_types: int = 3,
        rbf: int = 16,
        cutoff: float = 6.0,
        attention: bool = True,
        update_coords: bool = False,
        pose_features: int = 5,
        use_pose_features: bool = True,
        dropout: float = 0.0,
    ) -> None:
        super().__init__()
        self.use_pose_features = use_pose_features
        self.embedding = nn.Linear(in_features, hidden)
        self.layers = nn.ModuleList(
            EGNNLayer(
                hidden,
                edge_types=edge_types,
                rbf=rbf,
                cutoff=cutoff,
                attention=attention,
                update_coords=update_coords,
                dropout=dropout,
            )
            for _ in range(layers)
        )
        head_input = 2 * hidden + (pose_features if use_pose_features else 0)
        self.head = nn.Sequential(
            nn.Linear(head_input, hidden),
            nn.SiLU(),
            nn.Dropout(dropout),
            nn.Linear(hidden, 1),
        )

    def reset_parameters(self) -> None:
        """Re-initialise all learnable parameters."""
        self.embedding.reset_parameters()
        for layer in self.layers:
            layer.reset_parameters()
        for module in self.head:
            if isinstance(module, nn.Linear):
                module.reset_parameters()

    def forward(self, batch) -> Tensor:
        """Return one float32 logit per graph in ``batch``."""
        num_graphs = graph_count(batch)
        # A float32 residual stream: under bf16 autocast the layers' MLPs still run in bf16, but
        # the sums h + update then promote to float32 instead of rounding away at every layer.
        h = self.embedding(batch.x).float()
        pos = batch.pos
        for layer in self.layers:
            h, pos = layer(h, pos, batch.edge_index, batch.edge_type)
        pooled = ligand_pool(h.float(), batch.is_ligand, batch.batch, num_graphs)
        if self.use_pose_features:
            pose = torch.log1p(batch.pose_features.float().clamp_min(0.0))
            pooled = torch.cat([pooled, pose.reshape(num_graphs, -1)], dim=-1)
        return self.head(pooled).squeeze(-1).float()


def graph_count(batch) -> int:
    """Number of graphs in ``batch``, read so that torch.compile keeps it symbolic.

    ``batch.num_graphs`` is a plain Python int, which torch.compile specialises on the first call
    and recompiles for when it changes; the leading size of ``pose_features`` carries the same
    number as a tensor dimension, which ``dynamic=True`` treats as symbolic from the start.
    """
    pose_features = getattr(batch, "pose_features", None)
    if pose_features is None:
        return batch.num_graphs
    return pose_features.size(0)


def ligand_pool(h: Tensor, is_ligand: Tensor, graph: Tensor, num_graphs: int) -> Tensor:
    """Concatenate the mean and the max of ligand-atom features per graph.

    Masks instead of boolean indexing keep shapes independent of the data, so the readout
    compiles once for dynamic shapes; a graph without ligand atoms pools to zeros.
    """
    ligand = is_ligand.unsqueeze(-1)
    weight = ligand.to(h.dtype)
    ligand_count = scatter(weight, graph, dim=0, dim_size=num_graphs, reduce="sum")
    mean = scatter(h * weight, graph, dim=0, dim_size=num_graphs, reduce="sum")
    mean = mean / ligand_count.clamp_min(1.0)
    # A large finite value, not -inf: the max then stays finite and its gradient well defined.
    lowest = torch.finfo(h.dtype).min
    ligand_only = h.masked_fill(~ligand, lowest)
    maximum = scatter(ligand_only, graph, dim=0, dim_size=num_graphs, reduce="max")
    maximum = torch.where(ligand_count > 0, maximum, torch.zeros_like(maximum))
    return torch.cat([mean, maximum], dim=-1)


def build(cfg) -> EGNNClassifier:
    """Build an :class:`EGNNClassifier` from any object with the model's attributes."""
    return EGNNClassifier(
        in_features=getattr(cfg, "in_features", 19),
        hidden=getattr(cfg, "hidden", 64),
        layers=getattr(cfg, "layers", 4),
        edge_types=getattr(cfg, "edge_types", 3),
        rbf=getattr(cfg, "rbf", 16),
        cutoff=getattr(cfg, "cutoff", 6.0),
        attention=getattr(cfg, "attention", True),
        update_coords=getattr(cfg, "update_coords", False),
        pose_features=getattr(cfg, "pose_features", 5),
        use_pose_features=getattr(cfg, "use_pose_features", True),
        dropout=getattr(cfg, "dropout", 0.0),
    )
