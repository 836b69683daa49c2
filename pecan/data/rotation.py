"""Uniform random rigid rotations: the one implementation behind every augmentation.

The readers' augmentation (``pecan.data.h5dataset``, ``pecan.data.packed``) and cnn3d's on-device grid
augmentation all draw their rotations here. It imports only torch, so the data path can use it without
loading a model; PyG's ``RandomRotate`` turns about one axis by a uniform angle, and chaining three of them
is not uniform over rotations, hence this module.
"""

from __future__ import annotations

from typing import Optional

import torch
from torch import Tensor


def random_rotations(
    count: int, device: Optional[torch.device] = None, generator: Optional[torch.Generator] = None
) -> Tensor:
    """``count`` proper rotation matrices [count, 3, 3], uniform over SO(3), drawn from torch's generator (or
    ``generator``): a normalised 4-D Gaussian is a uniform unit quaternion, and a uniform unit quaternion is
    a uniform rotation."""
    quaternion = torch.randn(count, 4, device=device, generator=generator)
    w, x, y, z = (quaternion / quaternion.norm(dim=-1, keepdim=True)).unbind(-1)
    rows = (
        (1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)),
        (2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)),
        (2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)),
    )
    return torch.stack([torch.stack(row, dim=-1) for row in rows], dim=-2)


def rotate(local: Tensor, rotations: Tensor, graph: Tensor) -> Tensor:
    """Positions ``local`` [N, 3] (relative to their graph's centre) turned by their graph's rotation
    (``rotations`` [B, 3, 3], ``graph`` [N] the graph of each atom)."""
    return torch.einsum("nij,nj->ni", rotations[graph], local)


def rotate_about_centroids(pos: Tensor, graph: Tensor, num_graphs: int) -> Tensor:
    """Each graph's positions [N, 3] turned by its own random rotation about the centroid of its atoms."""
    counts = pos.new_zeros(num_graphs, 1).index_add_(0, graph, pos.new_ones(pos.size(0), 1))
    centres = pos.new_zeros(num_graphs, 3).index_add_(0, graph, pos) / counts.clamp_min(1.0)
    rotations = random_rotations(num_graphs, device=pos.device).to(pos.dtype)
    return rotate(pos - centres[graph], rotations, graph) + centres[graph]
