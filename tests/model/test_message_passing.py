"""Message passing reads the neighbours: a node's output depends on its neighbours' features and on
nothing outside its neighbourhood, through the layer and through the whole registered model.

A message built from the receiving atom's features twice (neighbour ignored) keeps every invariance,
gradient and overfit test green; these catch it.
"""

import pytest
import torch
from torch_geometric.data import Batch, Data

from model import build_model
from model.egnn import EGNNLayer
from pecan.config import ModelConfig

HIDDEN = 16


def chain(count: int = 5):
    """Atoms on a line 1 A apart with edges only between consecutive atoms (both directions)."""
    pos = torch.zeros(count, 3)
    pos[:, 0] = torch.arange(count, dtype=torch.float32)
    src = torch.arange(count - 1)
    edge_index = torch.cat([torch.stack([src, src + 1]), torch.stack([src + 1, src])], dim=1)
    return pos, edge_index


@pytest.mark.parametrize("attention", [True, False])
@pytest.mark.parametrize("update_coords", [False, True])
def test_layer_output_depends_on_neighbour_features_only(attention, update_coords):
    torch.manual_seed(0)
    layer = EGNNLayer(HIDDEN, cutoff=4.5, attention=attention, update_coords=update_coords).eval()
    pos, edge_index = chain(5)
    edge_type = torch.zeros(edge_index.shape[1], dtype=torch.long)
    h = torch.randn(5, HIDDEN)
    with torch.no_grad():
        h0, pos0 = layer(h, pos, edge_index, edge_type)
        changed = h.clone()
        changed[1] += torch.randn(HIDDEN)  # atom 1's neighbours are 0 and 2
        h1, pos1 = layer(changed, pos, edge_index, edge_type)
    moved = (h1 - h0).abs().amax(dim=1)
    assert moved[0] > 1e-3 and moved[2] > 1e-3, "neighbours of the changed atom did not see it"
    assert moved[3] == 0 and moved[4] == 0, "atoms two or more edges away changed after one layer"
    if update_coords:
        shift = (pos1 - pos0).abs().amax(dim=1)
        assert shift[0] > 0 and shift[2] > 0
        assert shift[3] == 0 and shift[4] == 0


def test_layer_messages_flow_along_edge_direction():
    """A single directed edge 0 -> 1 changes atom 1 when atom 0 changes, and never the reverse."""
    torch.manual_seed(1)
    layer = EGNNLayer(HIDDEN, cutoff=4.5).eval()
    pos = torch.tensor([[0.0, 0, 0], [1.5, 0, 0]])
    edge_index = torch.tensor([[0], [1]])
    edge_type = torch.zeros(1, dtype=torch.long)
    h = torch.randn(2, HIDDEN)
    with torch.no_grad():
        before, _ = layer(h, pos, edge_index, edge_type)
        source_changed = h.clone()
        source_changed[0] += 1.0
        after_source, _ = layer(source_changed, pos, edge_index, edge_type)
        target_changed = h.clone()
        target_changed[1] += 1.0
        after_target, _ = layer(target_changed, pos, edge_index, edge_type)
    assert (after_source[1] - before[1]).abs().max() > 1e-3
    torch.testing.assert_close(after_target[0], before[0], rtol=0, atol=0)


def pocket_graph():
    """Two ligand atoms, one protein atom bonded to ligand atom 1, one protein atom with no edges."""
    pos = torch.tensor([[0.0, 0, 0], [1.4, 0, 0], [4.0, 0, 0], [30.0, 0, 0]])
    x = torch.randn(4, 19, generator=torch.Generator().manual_seed(2))
    is_ligand = torch.tensor([True, True, False, False])
    x[:, 13] = torch.where(is_ligand, 1.0, -1.0)  # molcode feature
    edge_index = torch.tensor([[0, 1, 1, 2], [1, 0, 2, 1]])
    edge_type = torch.tensor([0, 0, 1, 1])
    data = Data(
        x=x,
        pos=pos,
        edge_index=edge_index,
        edge_type=edge_type,
        is_ligand=is_ligand,
        pose_features=torch.ones(1, 5),
        y=torch.zeros(1),
        num_nodes=4,
    )
    return Batch.from_data_list([data])


# Every registered variant that reads atom graphs belongs here.
@pytest.mark.parametrize("name", ["egnn"])
def test_pose_score_depends_on_bonded_protein_atom_features(name):
    torch.manual_seed(3)
    model = build_model(name, ModelConfig(hidden=HIDDEN, layers=2, rbf=8, cutoff=4.5)).eval()
    batch = pocket_graph()
    with torch.no_grad():
        reference = model(batch)
        bonded = batch.clone()
        bonded.x[2, :13] += 2.0  # the protein atom next to the ligand, molcode untouched
        unbonded = batch.clone()
        unbonded.x[3, :13] += 2.0  # the protein atom with no edges
        after_bonded, after_unbonded = model(bonded), model(unbonded)
    assert (after_bonded - reference).abs().max() > 1e-4, "a protein atom bonded to the ligand is ignored"
    torch.testing.assert_close(after_unbonded, reference, rtol=0, atol=0)
