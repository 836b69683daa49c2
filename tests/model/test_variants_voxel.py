"""cnn3d voxelisation: rotation consistency, out-of-box atoms counted, grid memory reported, augmentation, and
its per-graph sums and means equal to PyG's scatter."""

import logging

import numpy as np
import pytest
import torch

from model.cnn3d import ligand_centres, random_rigid, voxelize
from pecan.data import layout
from tests.model.variant_batches import tiny_batch, tiny_model

GRID, RESOLUTION = 12, 1.0


def grids_of(pos, batch):
    centres = ligand_centres(pos, batch.is_ligand, batch.batch, batch.num_graphs)
    return voxelize(
        pos - centres[batch.batch], batch.x, batch.vdw, batch.batch, batch.num_graphs, GRID, RESOLUTION, 1.0
    )


def rotate_about_ligand_centroids(batch, matrix):
    centres = ligand_centres(batch.pos, batch.is_ligand, batch.batch, batch.num_graphs)[batch.batch]
    return (batch.pos - centres) @ matrix.T + centres


QUARTER_TURNS = {
    # (rotation matrix, the same quarter turn applied to the grid's (x, y, z) voxel axes 2, 3, 4)
    "z": (torch.tensor([[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]]), (2, 3)),
    "x": (torch.tensor([[1.0, 0.0, 0.0], [0.0, 0.0, -1.0], [0.0, 1.0, 0.0]]), (3, 4)),
}


@pytest.mark.parametrize("axis", sorted(QUARTER_TURNS))
def test_grid_of_rotated_input_is_the_rotated_grid(axis):
    matrix, dims = QUARTER_TURNS[axis]
    batch = tiny_batch(2)
    grid, _ = grids_of(batch.pos, batch)
    rotated_grid, _ = grids_of(rotate_about_ligand_centroids(batch, matrix), batch)
    assert grid.abs().sum() > 0
    # A quarter turn from the first axis towards the second: out[i, j] = in[j, G - 1 - i].
    expected = torch.rot90(grid, k=1, dims=dims)
    assert torch.allclose(rotated_grid, expected, atol=1e-4)
    assert not torch.allclose(rotated_grid, grid, atol=1e-4)  # the check would notice a wrong turn


def test_atom_at_a_voxel_centre_carries_its_features():
    local = torch.zeros(1, 3)  # grid centre; with an even grid it lies between voxels, so move half a voxel
    local += 0.5 * RESOLUTION
    x = torch.zeros(1, layout.N_FEATURES)
    x[0, 3] = 2.0
    grid, outside = voxelize(local, x, torch.tensor([1.7]), torch.zeros(1, dtype=torch.long), 1, GRID, RESOLUTION, 1.0)
    assert int(outside) == 0
    assert grid[0, 3, GRID // 2, GRID // 2, GRID // 2] == pytest.approx(2.0)
    assert grid[0, 3].sum() > 2.0 and grid[:, :3].abs().sum() == 0


def test_atoms_outside_the_box_are_counted():
    batch = tiny_batch(2)
    pos = batch.pos.clone()
    # The protein atom nearest each ligand centroid: inside the box, and moving it keeps the centroid.
    centres = ligand_centres(pos, batch.is_ligand, batch.batch, batch.num_graphs)
    distance = (pos - centres[batch.batch]).norm(dim=-1).masked_fill(batch.is_ligand, float("inf"))
    far = [int(batch.ptr[g]) + int(distance[batch.batch == g].argmin()) for g in range(batch.num_graphs)]
    pos[far] += torch.tensor([100.0, 0.0, 0.0])
    _, inside_only = grids_of(batch.pos, batch)
    grid, outside = grids_of(pos, batch)
    assert int(outside) == int(inside_only) + 2
    net = tiny_model("cnn3d", grid_size=GRID, resolution=RESOLUTION).eval()
    batch.pos = pos
    net(batch)
    net(batch)
    report = net.voxel_report(batch.num_graphs)
    assert report["atoms_outside"] == 2 * int(outside)
    assert report["atoms_seen"] == 2 * batch.num_nodes


def test_grid_memory_per_batch_is_reported(caplog):
    net = tiny_model("cnn3d", grid_size=GRID).eval()
    batch = tiny_batch(3)
    with caplog.at_level(logging.INFO, logger="model.cnn3d"):
        net(batch)
    expected = 3 * layout.N_FEATURES * GRID**3 * 4 / 2**20
    assert net.voxel_report(3)["grid_mib_per_batch"] == pytest.approx(expected)
    assert f"{expected:.1f} MiB per batch of 3" in caplog.text
    assert "atoms outside the box" in caplog.text


def test_augmentation_in_training_only():
    net = tiny_model("cnn3d", grid_size=GRID)
    batch = tiny_batch(2)
    net.eval()
    assert torch.equal(net.grid(batch), net.grid(batch))
    net.train()
    torch.manual_seed(0)
    first = net.grid(batch)
    assert not torch.allclose(first, net.grid(batch))
    assert float(first.sum()) == pytest.approx(float(net.eval().grid(batch).sum()), rel=0.05)  # moved, not lost


def test_random_rigid_is_proper_and_bounded():
    rotation, shift = random_rigid(64, 1.5, torch.device("cpu"))
    identity = torch.eye(3).expand(64, 3, 3)
    assert torch.allclose(rotation @ rotation.transpose(1, 2), identity, atol=1e-5)
    assert torch.allclose(torch.linalg.det(rotation), torch.ones(64), atol=1e-5)
    assert shift.abs().max() <= 1.5 and shift.std() > 0.3
    assert np.unique(rotation.numpy().round(4), axis=0).shape[0] == 64


def test_graph_sum_and_mean_are_pygs_scatter_to_the_bit():
    from torch_geometric.utils import scatter

    from model.cnn3d import graph_mean, graph_sum

    generator = torch.Generator().manual_seed(3)
    values = torch.randn(40, 3, generator=generator) * 50
    graph = torch.randint(0, 6, (40,), generator=generator)
    graph[graph == 4] = 5  # graph 4 has no rows: mean 0, as PyG's
    for num_graphs in (6, 8):
        assert torch.equal(graph_sum(values, graph, num_graphs), scatter(values, graph, 0, num_graphs, "sum"))
        assert torch.equal(graph_mean(values, graph, num_graphs), scatter(values, graph, 0, num_graphs, "mean"))
