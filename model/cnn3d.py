"""The voxel modality: atoms splatted onto a fixed-resolution grid per batch on the device, then a 3D CNN.

The grid is built inside ``forward`` from the batch's atoms (packs and HDF5 levels serve it unchanged), so
the random rigid rotation + translation of training happens on the device, per sample, every step.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass

import torch
from torch import Tensor, nn

from model.readout import graph_count, with_pose_features
from model.settings import setting, settings_from
from pecan.data import schema
from pecan.data.rotation import random_rotations, rotate

log = logging.getLogger(__name__)


@dataclass
class CNN3DConfig:
    """Keys of the ``cnn3d`` variant."""

    grid_size: int = setting("Voxels per side of the cubic grid, centred on the ligand centroid.", 24)
    resolution: float = setting("Angstrom per voxel (fixed, not relative to the complex's size).", 1.0)
    radius_scale: float = setting(
        "Gaussian width as a multiple of each atom's van der Waals radius r: density exp(-2 d^2 / (s r)^2), "
        "cut at 1.5 s r.",
        1.0,
    )
    channels: int = setting("Filters of the first conv block; each further block doubles them.", 16)
    blocks: int = setting("Conv blocks (two 3x3x3 convs and a 2x max-pool each).", 2)
    augment: bool = setting(
        "Random rigid rotation + translation per sample in training (on the device; the decode cache is off).", True
    )
    max_shift: float = setting("Largest translation per axis (Angstrom) of the training augmentation.", 2.0)
    use_pose_features: bool = setting("Feed the 5 interaction counts to the classifier head.", True)
    dropout: float = setting("Dropout in the classifier head.", 0.0)

    def problems(self, config) -> list[tuple[str, str]]:
        """(key, message) for every value this variant cannot run with."""
        out = [(f"model.{k}", "must be >= 1") for k in ("grid_size", "channels", "blocks") if getattr(self, k) < 1]
        out += [(f"model.{k}", "must be > 0") for k in ("resolution", "radius_scale") if getattr(self, k) <= 0]
        if self.max_shift < 0:
            out.append(("model.max_shift", "must be >= 0"))
        if self.grid_size >> self.blocks < 1:
            out.append(("model.grid_size", f"must be >= 2^blocks = {2**self.blocks} (each block halves it)"))
        if not 0.0 <= self.dropout < 1.0:
            out.append(("model.dropout", "must be in [0, 1)"))
        return out

    def grid_bytes(self, batch_size: int, channels: int) -> int:
        """Memory of one batch's float32 input grid of ``channels`` per-atom features."""
        return batch_size * channels * self.grid_size**3 * 4


def random_rigid(num_graphs: int, max_shift: float, device: torch.device) -> tuple[Tensor, Tensor]:
    """Uniform random rotations [B, 3, 3] (``pecan.data.rotation.random_rotations``) and translations [B, 3]
    uniform in [-max_shift, max_shift], drawn on ``device`` from torch's generator."""
    shift = (torch.rand(num_graphs, 3, device=device) * 2 - 1) * max_shift
    return random_rotations(num_graphs, device=device), shift


def graph_sum(values: Tensor, graph: Tensor, num_graphs: int) -> Tensor:
    """Per-graph sums of the rows of ``values`` [N, C] (``graph`` [N] the graph of each row): [B, C].

    The operations of PyG's ``scatter(reduce="sum")`` (a ``scatter_add_`` into zeros), so the sums are the
    same to the bit; plain torch, so a cnn3d process does not import PyG for one function."""
    return values.new_zeros(num_graphs, values.size(1)).scatter_add_(0, graph.unsqueeze(-1).expand_as(values), values)


def graph_mean(values: Tensor, graph: Tensor, num_graphs: int) -> Tensor:
    """Per-graph means of the rows of ``values`` [N, C], 0 for a graph without rows: PyG's
    ``scatter(reduce="mean")``, operation for operation."""
    count = values.new_zeros(num_graphs).scatter_add_(0, graph, values.new_ones(values.size(0))).clamp(min=1)
    return graph_sum(values, graph, num_graphs) / count.unsqueeze(-1)


def ligand_centres(pos: Tensor, is_ligand: Tensor, graph: Tensor, num_graphs: int) -> Tensor:
    """Centroid of each graph's ligand atoms [B, 3] (all atoms when a graph has no ligand atom)."""
    weight = is_ligand.float().unsqueeze(-1)
    ligand_sum = graph_sum(pos * weight, graph, num_graphs)
    ligand_count = graph_sum(weight, graph, num_graphs)
    all_mean = graph_mean(pos, graph, num_graphs)
    return torch.where(ligand_count > 0, ligand_sum / ligand_count.clamp_min(1.0), all_mean)


def voxelize(
    local: Tensor,
    features: Tensor,
    radii: Tensor,
    graph: Tensor,
    num_graphs: int,
    grid_size: int,
    resolution: float,
    radius_scale: float,
) -> tuple[Tensor, Tensor]:
    """Gaussian-splat per-atom ``features`` [N, C] at ``local`` positions [N, 3] (Angstrom, relative to each
    graph's grid centre) onto float32 grids [B, C, G, G, G]; returns the grids and the number of atoms whose
    centre lies outside their box (a 0-d tensor; their in-box tails are still splatted).

    Voxel (i, j, k) has its centre at ((i, j, k) - (G - 1) / 2) * resolution, so 90-degree rotations about
    the centre map voxel centres onto voxel centres. Every voxel within the cut-off is visited whatever the
    rounding of the nearest voxel, so the grid does not depend on ties.
    """
    local, features, radii = local.float(), features.float(), radii.float()
    half = (grid_size - 1) / 2
    u = local / resolution + half
    outside = ((u < -0.5) | (u > grid_size - 0.5)).any(dim=-1).sum()
    cutoff = 1.5 * radius_scale * radii  # [N]
    reach = math.ceil(1.5 * radius_scale * max(schema.VDW_RADII) / resolution + 0.5)
    steps = torch.arange(-reach, reach + 1, device=local.device)
    offsets = torch.stack(torch.meshgrid(steps, steps, steps, indexing="ij"), dim=-1).reshape(-1, 3)
    voxel = torch.round(u).long().unsqueeze(1) + offsets  # [N, K, 3]
    squared = (((voxel.float() - u.unsqueeze(1)) * resolution) ** 2).sum(dim=-1)
    inside = ((voxel >= 0) & (voxel < grid_size)).all(dim=-1) & (squared <= cutoff.unsqueeze(1) ** 2)
    # Only about a tenth of the window lies inside an atom's sphere: splat just those entries.
    atom, slot = inside.nonzero(as_tuple=True)
    weight = torch.exp(-2.0 * squared[atom, slot] / (radius_scale * radii[atom]) ** 2)
    voxel = voxel[atom, slot]
    flat = ((graph[atom] * grid_size + voxel[:, 0]) * grid_size + voxel[:, 1]) * grid_size + voxel[:, 2]
    grid = torch.zeros(num_graphs * grid_size**3, features.size(1), device=local.device)
    grid.index_add_(0, flat, weight.unsqueeze(-1) * features[atom])
    grid = grid.view(num_graphs, grid_size, grid_size, grid_size, -1).permute(0, 4, 1, 2, 3).contiguous()
    return grid, outside


class CNN3DClassifier(nn.Module):
    """Scores a docked pose with a 3D CNN over its voxel grid.

    Input: a batch (``pecan.data.batch.GraphBatch``) with ``x``, ``pos``, ``vdw``, ``is_ligand``, ``batch`` and
    ``pose_features``.
    Output: float32 logits [B]. ``atoms_outside`` and ``atoms_seen`` count, since construction, the atoms
    whose centre fell outside the box.
    """

    def __init__(self, cfg: CNN3DConfig, in_features: int, pose_features: int) -> None:
        super().__init__()
        self.cfg = cfg
        self.in_features = in_features
        layers, width = [], in_features
        for block in range(cfg.blocks):
            out = cfg.channels * 2**block
            layers += [
                nn.Conv3d(width, out, 3, padding=1),
                nn.SiLU(),
                nn.Conv3d(out, out, 3, padding=1),
                nn.SiLU(),
                nn.MaxPool3d(2),
            ]
            width = out
        self.convolutions = nn.Sequential(*layers, nn.AdaptiveAvgPool3d(1), nn.Flatten())
        head_input = width + (pose_features if cfg.use_pose_features else 0)
        self.head = nn.Sequential(nn.Linear(head_input, width), nn.SiLU(), nn.Dropout(cfg.dropout), nn.Linear(width, 1))
        # Plain tensors, not buffers: DDP would overwrite each rank's counts with rank 0's every step.
        self.atoms_outside: Tensor | None = None
        self.atoms_seen: Tensor | None = None
        self.reported = False

    def grid(self, batch) -> Tensor:
        """The batch's voxel grids [B, in_features, G, G, G], augmented when training with ``augment``."""
        num_graphs = graph_count(batch)
        pos = batch.pos.float()
        local = pos - ligand_centres(pos, batch.is_ligand, batch.batch, num_graphs)[batch.batch]
        if self.training and self.cfg.augment:
            rotation, shift = random_rigid(num_graphs, self.cfg.max_shift, pos.device)
            local = rotate(local, rotation, batch.batch) + shift[batch.batch]
        grids, outside = voxelize(
            local,
            batch.x,
            batch.vdw.float(),
            batch.batch,
            num_graphs,
            self.cfg.grid_size,
            self.cfg.resolution,
            self.cfg.radius_scale,
        )
        self.count_outside(outside.detach(), pos.size(0), num_graphs)
        return grids

    def count_outside(self, outside: Tensor, atoms: int, num_graphs: int) -> None:
        """Accumulate the out-of-box count on the device; log it and the grid memory once (one host sync)."""
        if torch.compiler.is_compiling():
            return
        if self.atoms_outside is None or self.atoms_outside.device != outside.device:
            self.atoms_outside = torch.zeros((), dtype=torch.long, device=outside.device)
            self.atoms_seen = torch.zeros((), dtype=torch.long, device=outside.device)
        self.atoms_outside += outside
        self.atoms_seen += atoms
        if not self.reported:
            self.reported = True
            log.info(
                "cnn3d: %d^3 grid at %.2f A/voxel, %.1f MiB per batch of %d; first batch: %d of %d atoms "
                "outside the box",
                self.cfg.grid_size,
                self.cfg.resolution,
                self.cfg.grid_bytes(num_graphs, self.in_features) / 2**20,
                num_graphs,
                int(outside),
                atoms,
            )

    def voxel_report(self, batch_size: int) -> dict:
        """Grid memory per batch and the out-of-box atom counts so far (host sync: call when logging)."""
        return {
            "grid_mib_per_batch": self.cfg.grid_bytes(batch_size, self.in_features) / 2**20,
            "atoms_outside": int(self.atoms_outside) if self.atoms_outside is not None else 0,
            "atoms_seen": int(self.atoms_seen) if self.atoms_seen is not None else 0,
        }

    def forward(self, batch) -> Tensor:
        """Return one float32 logit per graph."""
        features = self.convolutions(self.grid(batch))
        pooled = with_pose_features(features.float(), batch, self.cfg.use_pose_features)
        return self.head(pooled).squeeze(-1).float()


def build(cfg, sizes: dict[str, int]) -> CNN3DClassifier:
    """Build a :class:`CNN3DClassifier` from ``cfg``'s :class:`CNN3DConfig` keys and the data's input
    ``sizes`` (``pecan.data.schema.input_sizes``; the grid has no edges, so no edge types)."""
    return CNN3DClassifier(settings_from(CNN3DConfig, cfg), sizes["in_features"], sizes["pose_features"])
