"""E(n)-equivariant graph neural network that scores docked protein-ligand poses."""

from __future__ import annotations

from typing import NamedTuple, Optional

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from model.egnn_config import EGNNConfig, config_fields  # noqa: F401 - re-exported: model.egnn.EGNNConfig
from model.readout import GaussianDistanceExpansion, graph_count, ligand_mean_max, with_pose_features
from pecan.data import schema
from pecan.data.schema import input_sizes  # noqa: F401 - the data's input sizes (re-exported: model.egnn.input_sizes)

# Width of ``batch.docking_features``: the model-input contract's.
DOCKING_FEATURES = schema.N_DOCKING_FEATURES


class EdgeGeometry(NamedTuple):
    """Per-edge inputs that depend only on positions and the graph, shared by layers when positions are fixed."""

    radial: Tensor
    """(E, 1 + rbf + edge types) float32: squared distance / cutoff², the distance's Gaussian expansion,
    and the edge type one-hot (so one matmul applies the radial and the edge-type blocks)."""
    direction: Optional[Tensor]
    """(E, 3) float32 unit vector from source to target; None unless coordinates are updated."""
    inverse_degree: Optional[Tensor]
    """(N, 1) float32 1 / max(in-degree, 1); None unless coordinates are updated."""


class EGNNLayer(nn.Module):
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

    The first linear map of :math:`\phi_e` is stored as one ``nn.Linear`` over the concatenation
    above (so checkpoints keep one layout) but evaluated by parts, which is the same function:
    :math:`W[\mathbf{h}_i, \mathbf{h}_j, \mathbf{r}_{ij}, \mathbf{a}_{ij}] + b =
    (W_i\mathbf{h})_i + (W_j\mathbf{h})_j + W_r\mathbf{r}_{ij} + (W_a A + b)_{t_{ij}}` —
    node projections computed once per node and gathered per edge; the radial part and the
    edge-type table :math:`W_a A + b` (one row per type, selected by a one-hot of the type) in one
    matmul over 1 + rbf + types columns.

    Messages are aggregated in float32 whatever the autocast dtype: a sum over a hundred
    neighbours loses too many digits in bfloat16.

    Any edge order gives the same result, but the gathers and sums by target (and their
    backward passes) are fastest when edges are sorted by target, as PECAN's graph builder and
    packs store them (a CPU training step 7-9% faster than with source-sorted edges; BENCHMARKS.md).

    Args:
        hidden (int): size of node features :math:`\mathbf{h}`.
        edge_types (int): number of edge types. (default: :obj:`3`)
        rbf (int): number of Gaussians in the distance expansion.
        cutoff (float): edge cutoff in Angstrom; scales distances.
        attention (bool): gate each message with :math:`e_{ij}`.
        update_coords (bool): also update coordinates.
        coords_weight (float): :math:`C`, the largest move per layer in Angstrom.
            (default: :obj:`1.0`)
        edge_embedding (int): size of the edge-type embedding :math:`\mathbf{a}_{ij}`.
            (default: :obj:`16`)
        dropout (float): dropout on the node update.
        epsilon (float): :math:`\epsilon` in the direction normalisation. (default: :obj:`1e-6`)

    Defaults not stated above are :class:`EGNNConfig`'s.

    Shapes:
        - **input:** node features :math:`(N, \text{hidden})`, positions :math:`(N, 3)`,
          edge indices :math:`(2, E)`, edge types :math:`(E,)`, optionally the
          :class:`EdgeGeometry` of these positions (computed here when not given)
        - **output:** node features :math:`(N, \text{hidden})` and positions :math:`(N, 3)`
          (float32; unchanged without update_coords)
    """

    def __init__(
        self,
        hidden: int = EGNNConfig.hidden,
        edge_types: int = 3,
        rbf: int = EGNNConfig.rbf,
        cutoff: float = EGNNConfig.cutoff,
        attention: bool = EGNNConfig.attention,
        update_coords: bool = EGNNConfig.update_coords,
        coords_weight: float = 1.0,
        edge_embedding: int = 16,
        dropout: float = EGNNConfig.dropout,
        epsilon: float = 1e-6,
    ) -> None:
        super().__init__()
        self.hidden = hidden
        self.cutoff = cutoff
        self.attention = attention
        self.update_coords = update_coords
        self.coords_weight = coords_weight
        self.epsilon = epsilon
        self.radial_size = 1 + rbf

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

    def geometry(self, pos: Tensor, edge_index: Tensor, edge_type: Tensor) -> EdgeGeometry:
        """The per-edge radial features (and, with update_coords, directions and degrees) of ``pos``."""
        source, target = edge_index[0], edge_index[1]
        # Flow is source -> target, so x_i is the target and x_j the source.
        difference = pos[target] - pos[source]
        squared_distance = (difference * difference).sum(dim=-1, keepdim=True)
        distance = squared_distance.clamp_min(1e-12).sqrt()
        one_hot = F.one_hot(edge_type, self.edge_type_embedding.num_embeddings).to(squared_distance.dtype)
        radial = torch.cat(
            [squared_distance / self.cutoff**2, self.distance_expansion(distance.squeeze(-1)), one_hot], dim=-1
        )
        if not self.update_coords:
            return EdgeGeometry(radial, None, None)
        direction = difference / (distance + self.epsilon)
        degree = pos.new_zeros(pos.size(0), 1).index_add_(0, target, torch.ones_like(distance))
        return EdgeGeometry(radial, direction, degree.clamp_min_(1.0).reciprocal_())

    def forward(
        self,
        h: Tensor,
        pos: Tensor,
        edge_index: Tensor,
        edge_type: Tensor,
        geometry: Optional[EdgeGeometry] = None,
        keep_positions: bool = False,
    ) -> tuple[Tensor, Tensor]:
        """Return updated node features and positions (``keep_positions`` skips the coordinate update)."""
        pos = pos.float()
        if geometry is None:
            geometry = self.geometry(pos, edge_index, edge_type)
        target = edge_index[1]
        message = self.message(h, edge_index, edge_type, geometry.radial)
        message_sum = h.new_zeros(h.size(0), self.hidden, dtype=torch.float32)
        message_sum = message_sum.index_add_(0, target, message.float())
        h = self.norm(h + self.node_update(h, message_sum))

        if self.coordinate_mlp is not None and not keep_positions:
            if geometry.direction is None or geometry.inverse_degree is None:
                raise ValueError("update_coords needs the geometry of the current positions, with directions")
            move = geometry.direction * torch.tanh(self.coordinate_mlp(message).float())
            move_sum = pos.new_zeros(pos.shape).index_add_(0, target, move)
            pos = pos + self.coords_weight * move_sum * geometry.inverse_degree
        return h, pos

    def message(self, h: Tensor, edge_index: Tensor, edge_type: Tensor, radial: Tensor) -> Tensor:
        """The gated message :math:`e_{ij}\\mathbf{m}_{ij}` of every edge."""
        source, target = edge_index[0], edge_index[1]
        first = self.edge_mlp[0]
        hidden, radial_end = self.hidden, 2 * self.hidden + self.radial_size
        weight = first.weight
        # Per-node projections by the h_i and h_j blocks of W: N x h work, gathered per edge.
        node_projection = F.linear(h, torch.cat([weight[:, :hidden], weight[:, hidden : 2 * hidden]]))
        # The edge-type block applied to the embedding table (one row per type, bias folded in), then
        # selected by the one-hot columns of ``radial`` in the same matmul as the radial block.
        type_table = F.linear(self.edge_type_embedding.weight, weight[:, radial_end:], first.bias)
        edge_weight = torch.cat([weight[:, 2 * hidden : radial_end], type_table.t()], dim=1)
        gathered = node_projection[:, :hidden].index_select(0, target)
        gathered = gathered.add_(node_projection[:, hidden:].index_select(0, source))
        if not torch.is_grad_enabled() and not torch.is_autocast_enabled(h.device.type):
            return self._message_in_place(gathered, radial, edge_weight)
        pre_activation = torch.addmm(gathered, radial, edge_weight.t())
        message = self.edge_mlp[3](self.edge_mlp[2](F.silu(pre_activation)))
        if self.gate is not None:
            message = message * torch.sigmoid(self.gate(message))
        return message

    def _message_in_place(self, gathered: Tensor, radial: Tensor, edge_weight: Tensor) -> Tensor:
        """``message``'s last steps without autograd or autocast (in-place ops are not autocast), each edge
        tensor updated in place: the same values, one pass over E x hidden floats less per step (an edge
        tensor is the size of a core's cache)."""
        message = F.silu(gathered.addmm_(radial, edge_weight.t()), inplace=True)
        message = F.silu(self.edge_mlp[2](message), inplace=True)
        if self.gate is not None:
            message = message.mul_(torch.sigmoid(self.gate(message)))
        return message

    def node_update(self, h: Tensor, message_sum: Tensor) -> Tensor:
        r""":math:`\phi_h(\mathbf{h}, \sum e\mathbf{m})`, its first linear map applied by blocks (no concat)."""
        first, weight = self.node_mlp[0], self.node_mlp[0].weight
        update = F.linear(h, weight[:, : self.hidden], first.bias) + F.linear(message_sum, weight[:, self.hidden :])
        return self.node_mlp[3](self.node_mlp[2](self.node_mlp[1](update)))

    def __repr__(self) -> str:
        return (
            f"{self.__class__.__name__}({self.hidden}, attention={self.attention}, update_coords={self.update_coords})"
        )


class EGNNClassifier(nn.Module):
    r"""Scores a docked pose as near-native (logit > 0) or decoy with a stack of
    :class:`EGNNLayer` and a ligand-only readout.

    Protein atoms shape the ligand atoms' features through ligand-protein edges, but only
    ligand atoms are pooled (mean and max), so the far side of the pocket cannot outvote the
    pose. Pose-level interaction counts are appended as :math:`\log(1 + n)`. Without coordinate
    updates the edge geometry is computed once per forward pass and shared by every layer.

    Args:
        in_features (int): per-atom input features (the shard format's feature columns).
        edge_types (int): number of edge types (the graph builder's).
        pose_features (int): size of ``batch.pose_features`` (the format's interaction counts).
        hidden, layers, rbf, cutoff, attention, update_coords, use_pose_features, dropout, use_docking_score,
        docking_prior:
            as documented in :class:`EGNNConfig`, whose defaults they share.

    Shapes:
        - **input:** a batch (:class:`pecan.data.batch.GraphBatch`, or PyG's ``Batch``) with ``x`` :math:`(N, F)`,
          ``pos`` :math:`(N, 3)`, ``edge_index`` :math:`(2, E)`, ``edge_type`` :math:`(E,)`,
          ``is_ligand`` :math:`(N,)`, ``batch`` :math:`(N,)`, ``pose_features`` :math:`(B, P)`, and
          ``docking_features`` :math:`(B, 3)` when ``use_docking_score``
        - **output:** float32 logits :math:`(B,)`
    """

    def __init__(
        self,
        in_features: int,
        edge_types: int,
        pose_features: int,
        hidden: int = EGNNConfig.hidden,
        layers: int = EGNNConfig.layers,
        rbf: int = EGNNConfig.rbf,
        cutoff: float = EGNNConfig.cutoff,
        attention: bool = EGNNConfig.attention,
        update_coords: bool = EGNNConfig.update_coords,
        use_pose_features: bool = EGNNConfig.use_pose_features,
        dropout: float = EGNNConfig.dropout,
        use_docking_score: bool = EGNNConfig.use_docking_score,
        docking_prior: float = EGNNConfig.docking_prior,
    ) -> None:
        super().__init__()
        self.use_pose_features = use_pose_features
        self.use_docking_score = use_docking_score
        self.update_coords = update_coords
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
        head_input += DOCKING_FEATURES if use_docking_score else 0
        self.head = nn.Sequential(
            nn.Linear(head_input, hidden),
            nn.SiLU(),
            nn.Dropout(dropout),
            nn.Linear(hidden, 1),
        )
        # The docking-score prior: a learned weight on the pose's gap to its complex's best score, and a head
        # whose output starts at zero, so the untrained model ranks a complex's poses as the docking score does.
        self.docking_prior_start = float(docking_prior)
        self.docking_prior = nn.Parameter(torch.tensor(self.docking_prior_start)) if docking_prior > 0 else None
        self.zero_head_output()
        # Scoring sets this (``pecan score``): with positions fixed, each layer then computes only the messages
        # that reach the ligand readout (the same logits, ~half the edge work); training never does.
        self.readout_edges_only = False

    def reset_parameters(self) -> None:
        """Re-initialise all learnable parameters."""
        self.embedding.reset_parameters()
        for layer in self.layers:
            layer.reset_parameters()
        for module in self.head:
            if isinstance(module, nn.Linear):
                module.reset_parameters()
        self.zero_head_output()

    def zero_head_output(self) -> None:
        """With the docking-score prior: its weight at the configured start, the head's last layer at zero (the
        prior alone ranks)."""
        if self.docking_prior is not None:
            nn.init.constant_(self.docking_prior, self.docking_prior_start)
            nn.init.zeros_(self.head[-1].weight)
            nn.init.zeros_(self.head[-1].bias)

    def forward(self, batch) -> Tensor:
        """Return one float32 logit per graph in ``batch``."""
        num_graphs = graph_count(batch)
        # A float32 residual stream: under bf16 autocast the layers' MLPs still run in bf16, but
        # the sums h + update then promote to float32 instead of rounding away at every layer.
        h = self.embedding(batch.x).float()
        pos = batch.pos.float()
        if self.readout_edges_only and not self.update_coords:
            h = self.readout_layers(h, pos, batch)
        else:
            geometry = self.shared_geometry(pos, batch.edge_index, batch.edge_type)
            last = len(self.layers) - 1
            for index, layer in enumerate(self.layers):
                # The last layer's positions feed nothing downstream, so its move is not computed.
                h, pos = layer(h, pos, batch.edge_index, batch.edge_type, geometry, keep_positions=index == last)
        pooled = ligand_mean_max(h.float(), batch.is_ligand, batch.batch, num_graphs)
        pooled = with_pose_features(pooled, batch, self.use_pose_features)
        if self.use_docking_score:
            pooled = torch.cat([pooled, batch.docking_features.float().reshape(num_graphs, -1)], dim=-1)
        logits = self.head(pooled).squeeze(-1).float() + self.unused_anchor()
        if self.docking_prior is not None:
            gap = batch.docking_features.float().reshape(num_graphs, -1)[:, 1]
            logits = logits - self.docking_prior * gap
        return logits

    def readout_layers(self, h: Tensor, pos: Tensor, batch) -> Tensor:
        """The layers' node features, each layer computing only the messages the ligand readout depends on
        (those into ``readout_nodes``); the rows of other nodes are left unfinished. Positions stay fixed."""
        edge_index, edge_type, geometry = batch.edge_index, batch.edge_type, None
        for layer, nodes in zip(self.layers, readout_nodes(edge_index, batch.is_ligand, len(self.layers))):
            # The edges into this layer's nodes, in their order: a subset of the layer before's edges.
            rows = nodes.index_select(0, edge_index[1]).nonzero().squeeze(1)
            edge_index, edge_type = edge_index.index_select(1, rows), edge_type.index_select(0, rows)
            if geometry is None:
                geometry = self.layers[0].geometry(pos, edge_index, edge_type)
            else:
                geometry = geometry._replace(radial=geometry.radial.index_select(0, rows))
            h, _ = layer(h, pos, edge_index, edge_type, geometry, keep_positions=True)
        return h

    def unused_anchor(self) -> Tensor | float:
        """Zero times the parameters no output depends on (the last layer's coordinate MLP).

        They still receive a gradient, zero as before the last move was skipped, so DDP without
        ``find_unused_parameters`` sees every parameter used and AdamW's weight decay still applies.
        """
        mlp = self.layers[-1].coordinate_mlp
        if mlp is None:
            return 0.0
        return 0.0 * sum(parameter.sum() for parameter in mlp.parameters())

    def shared_geometry(self, pos: Tensor, edge_index: Tensor, edge_type: Tensor) -> Optional[EdgeGeometry]:
        """The edge geometry every layer reuses when positions stay fixed; None when layers move them."""
        if self.update_coords:
            return None
        return self.layers[0].geometry(pos, edge_index, edge_type)


def readout_nodes(edge_index: Tensor, is_ligand: Tensor, layers: int) -> list[Tensor]:
    """Per layer, the mask of the nodes whose features that layer must compute for a ligand-only readout
    after ``layers`` layers: the ligand atoms for the last; for each layer before, the next one's nodes and
    the sources of the edges into them. Every other node's features reach no pooled atom."""
    source, target = edge_index[0], edge_index[1]
    needed = [is_ligand.bool()]
    for _ in range(layers - 1):
        nodes = needed[0].clone()
        nodes[source[needed[0].index_select(0, target)]] = True
        needed.insert(0, nodes)
    return needed


def build(cfg, sizes: dict[str, int]) -> EGNNClassifier:
    """Build an :class:`EGNNClassifier` from a config holding every :class:`EGNNConfig` field and the data's
    input ``sizes`` (``pecan.data.schema.input_sizes``)."""
    return EGNNClassifier(**sizes, **config_fields(cfg))
