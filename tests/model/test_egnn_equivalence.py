"""The EGNN layer and classifier compute what their first formulation computed, on the same weights.

The reference below is that formulation, kept verbatim in substance: one concatenation
[h_i, h_j, d²/c², RBF(d), a_ij] per edge through the whole first linear layer, messages and
coordinate moves scattered together, distances and embeddings recomputed in every layer, and
PyG's ``scatter`` for the readout. Tolerance: fp32, atol 1e-5 / rtol 1e-4 on layer outputs and
logits (the split matmuls only change the order of float32 sums).
"""

import pytest
import torch
from torch_geometric.utils import scatter

from model.egnn import EGNNClassifier, EGNNLayer, input_sizes
from tests.model.test_egnn import CUTOFF, make_batch

TOLERANCE = dict(atol=1e-5, rtol=1e-4)


def reference_layer(layer: EGNNLayer, h, pos, edge_index, edge_type):
    """The layer's original formulation: concatenate per edge, then the full first linear map."""
    pos = pos.float()
    source, target = edge_index[0], edge_index[1]
    difference = pos[target] - pos[source]
    squared_distance = (difference * difference).sum(dim=-1, keepdim=True)
    distance = squared_distance.clamp_min(1e-12).sqrt()
    edge_features = torch.cat(
        [
            squared_distance / layer.cutoff**2,
            layer.distance_expansion(distance.squeeze(-1)),
            layer.edge_type_embedding(edge_type).float(),
        ],
        dim=-1,
    )
    direction = difference / (distance + layer.epsilon)
    message = layer.edge_mlp(torch.cat([h[target], h[source], edge_features], dim=-1))
    if layer.gate is not None:
        message = message * torch.sigmoid(layer.gate(message))
    message = message.float()
    if layer.coordinate_mlp is not None:
        move = direction * torch.tanh(layer.coordinate_mlp(message).float())
        message = torch.cat([message, move], dim=-1)
    aggregated = scatter(message, target, dim=0, dim_size=h.size(0), reduce="sum")
    message_sum = aggregated[:, : layer.hidden]
    h = layer.norm(h + layer.node_mlp(torch.cat([h, message_sum], dim=-1)))
    if layer.update_coords:
        count = scatter(torch.ones_like(distance), target, dim=0, dim_size=pos.size(0), reduce="sum")
        pos = pos + layer.coords_weight * aggregated[:, layer.hidden :] / count.clamp_min(1.0)
    return h, pos


def reference_classifier(model: EGNNClassifier, batch):
    """The classifier's original forward: every layer recomputes its geometry; PyG scatter readout."""
    num_graphs = batch.num_graphs
    h = model.embedding(batch.x).float()
    pos = batch.pos
    for layer in model.layers:
        h, pos = reference_layer(layer, h, pos, batch.edge_index, batch.edge_type)
    ligand = batch.is_ligand.unsqueeze(-1)
    weight = ligand.to(h.dtype)
    count = scatter(weight, batch.batch, dim=0, dim_size=num_graphs, reduce="sum")
    mean = scatter(h * weight, batch.batch, dim=0, dim_size=num_graphs, reduce="sum") / count.clamp_min(1.0)
    ligand_only = h.masked_fill(~ligand, torch.finfo(h.dtype).min)
    maximum = scatter(ligand_only, batch.batch, dim=0, dim_size=num_graphs, reduce="max")
    maximum = torch.where(count > 0, maximum, torch.zeros_like(maximum))
    pooled = torch.cat([mean, maximum], dim=-1)
    if model.use_pose_features:
        pose = torch.log1p(batch.pose_features.float().clamp_min(0.0))
        pooled = torch.cat([pooled, pose.reshape(num_graphs, -1)], dim=-1)
    return model.head(pooled).squeeze(-1).float()


def randomised(module: torch.nn.Module, seed: int) -> torch.nn.Module:
    """Give every parameter random values of order one, so no term of the sum is negligible."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for parameter in module.parameters():
            parameter.copy_(torch.randn(parameter.shape, generator=generator) * 0.5)
    return module.eval()


@pytest.mark.parametrize("update_coords", [False, True])
@pytest.mark.parametrize("attention", [False, True])
def test_layer_matches_reference_formulation(update_coords, attention):
    batch = make_batch(sizes=((10, 20), (8, 22), (5, 9)))
    layer = randomised(EGNNLayer(hidden=16, cutoff=CUTOFF, attention=attention, update_coords=update_coords), 1)
    h = torch.randn(batch.num_nodes, 16, generator=torch.Generator().manual_seed(2))
    with torch.no_grad():
        h_new, pos_new = layer(h, batch.pos, batch.edge_index, batch.edge_type)
        h_ref, pos_ref = reference_layer(layer, h, batch.pos, batch.edge_index, batch.edge_type)
    assert (h_ref - h).abs().max() > 0.1
    torch.testing.assert_close(h_new, h_ref, **TOLERANCE)
    torch.testing.assert_close(pos_new, pos_ref, **TOLERANCE)
    if update_coords:
        assert (pos_ref - batch.pos).abs().max() > 1e-2


@pytest.mark.parametrize("update_coords", [False, True])
def test_classifier_and_gradients_match_reference_formulation(update_coords):
    batch = make_batch(sizes=((10, 20), (8, 22), (0, 9), (5, 9)))
    torch.manual_seed(0)
    model = EGNNClassifier(**input_sizes(), hidden=16, layers=3, cutoff=CUTOFF, update_coords=update_coords)
    model = randomised(model, 3)
    logits = model(batch)
    expected = reference_classifier(model, batch)
    assert expected.abs().max() > 0.1
    torch.testing.assert_close(logits, expected, **TOLERANCE)
    new_gradients = torch.autograd.grad(logits.sum(), list(model.parameters()), allow_unused=True)
    reference_gradients = torch.autograd.grad(expected.sum(), list(model.parameters()), allow_unused=True)
    for (name, _), new, reference in zip(model.named_parameters(), new_gradients, reference_gradients):
        if reference is None:
            assert new is None or new.abs().max() == 0, name
            continue
        torch.testing.assert_close(new, reference, atol=1e-4, rtol=1e-3, msg=name)


def test_parameter_layout_of_earlier_checkpoints_loads():
    """Names and shapes of an earlier release's state dict (hidden 8, 1 layer, coordinate updates)."""
    earlier = {
        "embedding.weight": (8, 19),
        "embedding.bias": (8,),
        "layers.0.edge_type_embedding.weight": (3, 16),
        "layers.0.edge_mlp.0.weight": (8, 49),
        "layers.0.edge_mlp.0.bias": (8,),
        "layers.0.edge_mlp.2.weight": (8, 8),
        "layers.0.edge_mlp.2.bias": (8,),
        "layers.0.gate.weight": (1, 8),
        "layers.0.gate.bias": (1,),
        "layers.0.node_mlp.0.weight": (8, 16),
        "layers.0.node_mlp.0.bias": (8,),
        "layers.0.node_mlp.3.weight": (8, 8),
        "layers.0.node_mlp.3.bias": (8,),
        "layers.0.norm.weight": (8,),
        "layers.0.norm.bias": (8,),
        "layers.0.coordinate_mlp.0.weight": (8, 8),
        "layers.0.coordinate_mlp.0.bias": (8,),
        "layers.0.coordinate_mlp.2.weight": (1, 8),
        "head.0.weight": (8, 21),
        "head.0.bias": (8,),
        "head.3.weight": (1, 8),
        "head.3.bias": (1,),
    }
    model = EGNNClassifier(**input_sizes(), hidden=8, layers=1, update_coords=True)
    assert {name: tuple(value.shape) for name, value in model.state_dict().items()} == earlier
    state = {name: torch.randn(shape) for name, shape in earlier.items()}
    model.load_state_dict(state, strict=True)
