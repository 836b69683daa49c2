"""The one random rotation (pecan/data/rotation.py) behind the readers' augmentation and cnn3d's."""

import math

import pytest
import torch

from pecan.data.rotation import random_rotations, rotate, rotate_about_centroids


def test_rotations_are_proper():
    rotations = random_rotations(256, generator=torch.Generator().manual_seed(3))
    assert rotations.shape == (256, 3, 3) and rotations.dtype == torch.float32
    identity = torch.eye(3).expand(256, 3, 3)
    torch.testing.assert_close(rotations @ rotations.transpose(1, 2), identity, atol=1e-5, rtol=0)
    torch.testing.assert_close(torch.linalg.det(rotations), torch.ones(256), atol=1e-5, rtol=0)


def test_rotations_are_uniform():
    # Uniform over SO(3): every entry has mean 0 and mean square 1/3, and the rotation angle theta has density
    # (1 - cos theta) / pi on [0, pi], so its mean is pi/2 + 2/pi.
    rotations = random_rotations(200_000, generator=torch.Generator().manual_seed(0)).double()
    assert rotations.mean(dim=0).abs().max() < 0.01
    torch.testing.assert_close(rotations.square().mean(dim=0), torch.full((3, 3), 1 / 3).double(), atol=0.01, rtol=0)
    cos_angle = ((torch.diagonal(rotations, dim1=-2, dim2=-1).sum(-1) - 1) / 2).clamp(-1, 1)
    assert torch.arccos(cos_angle).mean().item() == pytest.approx(math.pi / 2 + 2 / math.pi, abs=0.01)


def test_rotations_follow_the_generator():
    first = random_rotations(4, generator=torch.Generator().manual_seed(5))
    assert torch.equal(first, random_rotations(4, generator=torch.Generator().manual_seed(5)))
    torch.manual_seed(5)
    assert not torch.equal(random_rotations(4), random_rotations(4))


def test_rotate_turns_each_graph_by_its_own_matrix():
    quarter_turn = torch.tensor([[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])  # 90 degrees about z
    rotations = torch.stack([torch.eye(3), quarter_turn])
    local = torch.tensor([[1.0, 0.0, 0.0], [1.0, 0.0, 0.0], [0.0, 2.0, 3.0]])
    turned = rotate(local, rotations, torch.tensor([0, 1, 1]))
    torch.testing.assert_close(turned, torch.tensor([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [-2.0, 0.0, 3.0]]))


def test_rotation_about_centroids_is_rigid_per_graph():
    torch.manual_seed(1)
    pos = torch.randn(9, 3) * 4 + torch.tensor([10.0, 0.0, -5.0])
    graph = torch.tensor([0, 0, 0, 0, 1, 1, 1, 2, 2])
    turned = rotate_about_centroids(pos, graph, 3)
    for g in range(3):
        mask = graph == g
        torch.testing.assert_close(torch.cdist(turned[mask], turned[mask]), torch.cdist(pos[mask], pos[mask]))
        torch.testing.assert_close(turned[mask].mean(0), pos[mask].mean(0))  # the centroid stays put
    assert not torch.allclose(turned, pos)
