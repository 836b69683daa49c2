"""Tests for the EGNN layer and pose classifier on tiny hand-built graphs."""

import dataclasses
import math

import pytest
import torch
from torch_geometric.data import Batch, Data

from model.egnn import EGNNClassifier, EGNNConfig, EGNNLayer, build, input_sizes
from pecan.config import ModelConfig

CUTOFF = 6.0
FEATURES = 19


def make_graph(generator, ligand_atoms=10, protein_atoms=20, label=0.0, isolated_protein=False):
    """Build one pose graph with radius edges, typed like the data pipeline's."""
    count = ligand_atoms + protein_atoms
    pos = torch.randn(count, 3, generator=generator) * 3.0
    if isolated_protein:
        # The last protein atom sits far from every other atom, so it has no edges.
        pos[-1] = torch.tensor([100.0, 100.0, 100.0])
    x = torch.randn(count, FEATURES, generator=generator)
    is_ligand = torch.arange(count) < ligand_atoms
    x[:, 13] = torch.where(is_ligand, 1.0, -1.0)
    distance = torch.cdist(pos, pos)
    adjacent = (distance < CUTOFF) & ~torch.eye(count, dtype=torch.bool)
    edge_index = adjacent.nonzero().t().contiguous()
    source_ligand = is_ligand[edge_index[0]]
    target_ligand = is_ligand[edge_index[1]]
    edge_type = torch.where(
        source_ligand & target_ligand,
        0,
        torch.where(source_ligand | target_ligand, 1, 2),
    )
    pose_features = torch.randint(0, 6, (1, 5), generator=generator).float()
    return Data(
        x=x,
        pos=pos,
        edge_index=edge_index,
        edge_type=edge_type,
        is_ligand=is_ligand,
        pose_features=pose_features,
        y=torch.tensor([label]),
        num_nodes=count,
    )


def make_batch(seed=0, sizes=((10, 20), (8, 22)), **kwargs):
    """Batch a few random pose graphs of the given (ligand, protein) sizes."""
    generator = torch.Generator().manual_seed(seed)
    graphs = [make_graph(generator, ligand, protein, **kwargs) for ligand, protein in sizes]
    return Batch.from_data_list(graphs)


def random_orthogonal(generator, reflect=False):
    """Random rotation (det +1), or a rotation composed with a reflection (det -1)."""
    q, r = torch.linalg.qr(torch.randn(3, 3, generator=generator, dtype=torch.float64))
    q = q * torch.sign(torch.diagonal(r))
    if torch.det(q) < 0:
        q[:, 0] = -q[:, 0]
    if reflect:
        q = q @ torch.diag(torch.tensor([-1.0, 1.0, 1.0], dtype=torch.float64))
    return q.float()


def transformed(batch, rotation, translation):
    """Copy of ``batch`` with positions rotated then translated."""
    moved = batch.clone()
    moved.pos = batch.pos @ rotation.T + translation
    return moved


def make_model(seed=0, **kwargs):
    """Small classifier in eval mode, seeded."""
    torch.manual_seed(seed)
    options = dict(hidden=32, layers=3, cutoff=CUTOFF)
    options.update(kwargs)
    return EGNNClassifier(**input_sizes(), **options).eval()


@pytest.mark.parametrize("update_coords", [False, True])
@pytest.mark.parametrize("reflect", [False, True])
def test_logits_invariant_to_rotation_reflection_translation(update_coords, reflect):
    batch = make_batch()
    model = make_model(update_coords=update_coords)
    generator = torch.Generator().manual_seed(1)
    rotation = random_orthogonal(generator, reflect=reflect)
    translation = torch.randn(3, generator=generator) * 10.0
    expected_det = -1.0 if reflect else 1.0
    assert torch.det(rotation).item() == pytest.approx(expected_det, abs=1e-5)
    with torch.no_grad():
        reference = model(batch)
        moved = model(transformed(batch, rotation, translation))
    torch.testing.assert_close(moved, reference, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("reflect", [False, True])
def test_layer_coordinates_equivariant(reflect):
    batch = make_batch()
    torch.manual_seed(0)
    layer = EGNNLayer(hidden=16, update_coords=True).eval()
    with torch.no_grad():
        # Make the coordinate MLP's output large enough that the move is not trivially zero.
        layer.coordinate_mlp[-1].weight.normal_()
    h = torch.randn(batch.num_nodes, 16)
    generator = torch.Generator().manual_seed(2)
    rotation = random_orthogonal(generator, reflect=reflect)
    translation = torch.randn(3, generator=generator) * 10.0
    with torch.no_grad():
        h_out, pos_out = layer(h, batch.pos, batch.edge_index, batch.edge_type)
        moved_pos = batch.pos @ rotation.T + translation
        h_moved, pos_moved = layer(h, moved_pos, batch.edge_index, batch.edge_type)
    assert (pos_out - batch.pos).abs().max() > 1e-2
    torch.testing.assert_close(pos_moved, pos_out @ rotation.T + translation, atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(h_moved, h_out, atol=1e-4, rtol=1e-4)


def test_layer_without_coordinate_update_keeps_positions():
    batch = make_batch()
    layer = EGNNLayer(hidden=16, update_coords=False)
    h = torch.randn(batch.num_nodes, 16)
    h_out, pos_out = layer(h, batch.pos, batch.edge_index, batch.edge_type)
    assert h_out.shape == h.shape
    assert torch.equal(pos_out, batch.pos)


def test_logits_invariant_to_node_order():
    generator = torch.Generator().manual_seed(3)
    graphs = [make_graph(generator, 10, 20), make_graph(generator, 7, 18)]
    model = make_model()
    with torch.no_grad():
        reference = model(Batch.from_data_list(graphs))
    permuted = []
    for graph in graphs:
        order = torch.randperm(graph.num_nodes, generator=generator)
        inverse = torch.empty_like(order)
        inverse[order] = torch.arange(order.numel())
        permuted.append(
            Data(
                x=graph.x[order],
                pos=graph.pos[order],
                edge_index=inverse[graph.edge_index],
                edge_type=graph.edge_type,
                is_ligand=graph.is_ligand[order],
                pose_features=graph.pose_features,
                y=graph.y,
                num_nodes=graph.num_nodes,
            )
        )
    with torch.no_grad():
        shuffled = model(Batch.from_data_list(permuted))
    torch.testing.assert_close(shuffled, reference, atol=1e-5, rtol=1e-5)


def test_shapes_and_dtype():
    batch = make_batch(sizes=((10, 20), (8, 22), (5, 9)))
    logits = make_model()(batch)
    assert logits.shape == (3,)
    assert logits.dtype == torch.float32
    assert torch.isfinite(logits).all()


@pytest.mark.parametrize("update_coords", [False, True])
def test_bfloat16_autocast_gives_finite_float32_logits(update_coords):
    batch = make_batch()
    model = make_model(update_coords=update_coords).train()
    with torch.autocast("cpu", dtype=torch.bfloat16):
        logits = model(batch)
    assert logits.dtype == torch.float32
    assert torch.isfinite(logits).all()
    logits.sum().backward()
    for name, parameter in model.named_parameters():
        assert parameter.grad is not None and torch.isfinite(parameter.grad).all(), name
    model.eval()
    with torch.no_grad():
        full_precision = model(batch)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            reduced_precision = model(batch)
    # bfloat16 keeps ~3 significant digits; the two should agree roughly, not exactly.
    assert (reduced_precision - full_precision).abs().max() < 0.1 + 0.1 * full_precision.abs().max()


@pytest.mark.parametrize("update_coords", [False, True])
@pytest.mark.parametrize("attention", [False, True])
def test_gradient_reaches_every_parameter(update_coords, attention):
    batch = make_batch()
    model = make_model(update_coords=update_coords, attention=attention).train()
    loss = torch.nn.functional.binary_cross_entropy_with_logits(model(batch), batch.y)
    loss.backward()
    missing = [
        name
        for name, parameter in model.named_parameters()
        if parameter.grad is None or parameter.grad.abs().sum() == 0
    ]
    if update_coords:
        # The last layer's coordinate move feeds nothing downstream.
        last = len(model.layers) - 1
        missing = [name for name in missing if not name.startswith(f"layers.{last}.coordinate_mlp")]
    assert missing == []


def test_readout_ignores_protein_atom_without_edges():
    batch = make_batch(isolated_protein=True)
    model = make_model()
    isolated = batch.ptr[1] - 1
    assert not batch.is_ligand[isolated]
    assert not (batch.edge_index == isolated).any()
    with torch.no_grad():
        reference = model(batch)
        changed = batch.clone()
        changed.x[isolated] += 10.0
        after = model(changed)
    torch.testing.assert_close(after, reference, atol=0.0, rtol=0.0)


def test_readout_depends_on_ligand_atom_features():
    batch = make_batch()
    model = make_model()
    with torch.no_grad():
        reference = model(batch)
        changed = batch.clone()
        changed.x[0] += 1.0
        after = model(changed)
    assert (after[0] - reference[0]).abs() > 1e-4
    torch.testing.assert_close(after[1], reference[1])


@pytest.mark.parametrize("use_pose_features", [False, True])
def test_pose_features_used_only_when_enabled(use_pose_features):
    batch = make_batch()
    model = make_model(use_pose_features=use_pose_features)
    with torch.no_grad():
        reference = model(batch)
        changed = batch.clone()
        changed.pose_features = batch.pose_features + 3.0
        after = model(changed)
    changed_amount = (after - reference).abs().max()
    if use_pose_features:
        assert changed_amount > 1e-4
    else:
        assert changed_amount == 0


def test_graph_without_ligand_atoms_gives_finite_logit():
    batch = make_batch(sizes=((0, 12), (6, 10)))
    logits = make_model()(batch)
    assert torch.isfinite(logits).all()


def test_overfits_tiny_data_set():
    generator = torch.Generator().manual_seed(4)
    graphs = [make_graph(generator, 6, 10, label=float(index % 2)) for index in range(8)]
    batch = Batch.from_data_list(graphs)
    model = make_model(hidden=32, layers=2).train()
    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    losses = []
    for _ in range(100):
        optimizer.zero_grad()
        loss = torch.nn.functional.binary_cross_entropy_with_logits(model(batch), batch.y)
        loss.backward()
        optimizer.step()
        losses.append(loss.detach())
    assert losses[-1] < 0.5 * losses[0]
    # Stronger than "the loss went down": every training graph ends on the right side of 0.
    model.eval()
    with torch.no_grad():
        predicted = model(batch) > 0
    assert predicted.tolist() == (batch.y > 0.5).tolist()


def test_build_takes_every_field_from_the_config():
    model = build(EGNNConfig(hidden=24, layers=2, update_coords=True), input_sizes())
    assert isinstance(model, EGNNClassifier)
    assert len(model.layers) == 2
    assert model.embedding.out_features == 24
    assert all(layer.update_coords and layer.attention for layer in model.layers)
    assert model.use_pose_features
    assert model.embedding.in_features == FEATURES
    assert model.layers[0].edge_type_embedding.num_embeddings == 3
    assert model.head[0].in_features == 2 * 24 + 5


def test_build_rejects_a_config_missing_a_field():
    from types import SimpleNamespace

    fields = {f.name: getattr(EGNNConfig(), f.name) for f in dataclasses.fields(EGNNConfig)}
    del fields["hidden"]
    with pytest.raises(AttributeError, match="hidden"):
        build(SimpleNamespace(hiden=24, **fields), input_sizes())
    with pytest.raises(TypeError, match="hiden"):
        EGNNConfig(hiden=24)


def test_app_model_config_reuses_the_model_defaults():
    app = ModelConfig()
    for setting in dataclasses.fields(EGNNConfig):
        assert getattr(app, setting.name) == getattr(EGNNConfig(), setting.name), setting.name
        assert setting.metadata["doc"], setting.name
    assert EGNNLayer().cutoff == EGNNConfig.cutoff == app.cutoff
    assert isinstance(build(app, input_sizes()), EGNNClassifier)


@pytest.mark.slow
def test_compiled_matches_eager_on_changing_sizes():
    from pecan.data.batch import GraphBatch
    from pecan.train.components import apply_compile

    torch._dynamo.reset()
    torch._dynamo.utils.compilation_time_metrics.clear()
    # Two layers, so that the second reads the coordinates the first moved; a third adds compile time
    # (each layer's kernels, C++-compiled on a cold cache) and nothing the second does not cover.
    model = make_model(update_coords=True, layers=2)
    compiled = apply_compile(model, True)  # as training compiles it: inductor, dynamic shapes
    # Four then six graphs of other sizes: one symbolic graph should serve both. (Two or three
    # graphs would coincide with a constant dimension and cost a recompile, not a failure.)
    first = ((10, 20), (8, 22), (6, 11), (4, 9))
    second = ((12, 25), (7, 15), (9, 30), (5, 8), (3, 14), (6, 6))
    for seed, sizes in [(5, first), (6, second)]:
        made = make_batch(seed=seed, sizes=sizes)
        batch = GraphBatch({name: made[name] for name in made.keys()}, made.num_graphs)  # the loaders' batch
        eager_logits = model(batch)
        eager_logits.sum().backward()
        eager_gradients = [parameter.grad.clone() for parameter in model.parameters()]
        model.zero_grad()
        compiled_logits = compiled(batch)
        compiled_logits.sum().backward()
        torch.testing.assert_close(compiled_logits, eager_logits, atol=1e-4, rtol=1e-4)
        for parameter, expected in zip(model.parameters(), eager_gradients):
            torch.testing.assert_close(parameter.grad, expected, atol=1e-4, rtol=1e-3)
        model.zero_grad()
    # One trace: a float setting traced as a symbolic input makes dynamo restart its analysis and trace the
    # model twice (compile_attempt_1), which costs seconds per graph.
    attempts = [line.split(",")[0] for line in torch._dynamo.utils.compile_times(repr="str").splitlines()]
    assert "compile_attempt_0" in attempts and "compile_attempt_1" not in attempts, attempts


# ---------------------------------------------------------------------------- the layer's formulas, by hand


def test_distance_expansion_is_gaussian_around_evenly_spaced_centres():
    from model.egnn import GaussianDistanceExpansion

    # Centres 0, 1, 2, 3 (1 A apart), width = spacing: exp(-(d - centre)^2 / 2).
    expansion = GaussianDistanceExpansion(count=4, cutoff=3.0)(torch.tensor([2.0, 0.5]))
    expected = torch.exp(-0.5 * torch.tensor([[4.0, 1.0, 0.0, 1.0], [0.25, 0.25, 2.25, 6.25]]))
    torch.testing.assert_close(expansion, expected)


def saturated_mover(coords_weight):
    """A layer whose coordinate MLP outputs tanh(...) = +1 on every edge."""
    layer = EGNNLayer(hidden=8, update_coords=True, coords_weight=coords_weight, cutoff=6.0).eval()
    with torch.no_grad():
        first, last = layer.coordinate_mlp[0], layer.coordinate_mlp[-1]
        first.weight.zero_()
        first.bias.fill_(10.0)
        last.weight.fill_(1.0)
    return layer


def test_coordinate_move_is_the_mean_unit_direction_times_the_weight():
    # Atoms 1, 2, 3 on the +x axis send messages to atom 0 at the origin; nothing is sent to them.
    pos = torch.tensor([[0.0, 0, 0], [1, 0, 0], [2, 0, 0], [3, 0, 0]])
    edge_index = torch.tensor([[1, 2, 3], [0, 0, 0]])
    layer = saturated_mover(coords_weight=0.5)
    with torch.no_grad():
        _, moved = layer(torch.randn(4, 8), pos, edge_index, torch.ones(3, dtype=torch.long))
    # x_0 += C * mean_j (x_0 - x_j)/|x_0 - x_j| * tanh(.) = 0.5 * (-1, 0, 0): half an Angstrom, away from them.
    expected = pos.clone()
    expected[0, 0] = -0.5
    torch.testing.assert_close(moved, expected, atol=1e-5, rtol=0)


def test_node_update_is_added_to_the_features_before_the_norm():
    layer = EGNNLayer(hidden=4).eval()
    update = torch.tensor([3.0, -1.0, 3.0, -1.0])  # phi_h outputs this for every node
    with torch.no_grad():
        layer.node_mlp[-1].weight.zero_()
        layer.node_mlp[-1].bias.copy_(update)
        h = torch.tensor([[1.0, 1.0, 1.0, 1.0]])  # a constant vector: the norm removes it
        out, _ = layer(h, torch.zeros(1, 3), torch.zeros(2, 0, dtype=torch.long), torch.zeros(0, dtype=torch.long))
    # LayerNorm(h + update) = LayerNorm(update): (update - 1) / 2 = [1, -1, 1, -1].
    torch.testing.assert_close(out, torch.tensor([[1.0, -1.0, 1.0, -1.0]]), atol=1e-4, rtol=0)


def test_attention_scales_each_message_by_its_gate():
    torch.manual_seed(0)
    layer = EGNNLayer(hidden=8, attention=True).eval()
    pos = torch.tensor([[0.0, 0, 0], [1, 0, 0], [0, 2, 0]])
    edge_index = torch.tensor([[1, 2, 0], [0, 0, 1]])
    edge_type = torch.tensor([0, 1, 0])
    h = torch.randn(3, 8)
    radial = layer.geometry(pos, edge_index, edge_type).radial
    with torch.no_grad():
        layer.gate.weight.zero_()
        layer.gate.bias.fill_(-torch.log(torch.tensor(3.0)))  # sigmoid(-ln 3) = 1/4 on every edge
        gated = layer.message(h, edge_index, edge_type, radial)
        layer.gate = None
        plain = layer.message(h, edge_index, edge_type, radial)
    assert plain.abs().min() > 0
    torch.testing.assert_close(gated, plain / 4)


def test_edge_geometry_by_hand():
    # Edges into atom 0: from atom 1, 0.5 A away (closer than any bond: the distance must not be clamped),
    # type 1; from atom 2, 2 A away, type 2.
    layer = EGNNLayer(hidden=8, rbf=4, cutoff=3.0, update_coords=True)
    pos = torch.tensor([[0.0, 0, 0], [0.5, 0, 0], [0, 0, 2]])
    geometry = layer.geometry(pos, torch.tensor([[1, 2], [0, 0]]), torch.tensor([1, 2]))
    gaussians = torch.exp(-0.5 * torch.tensor([[0.25, 0.25, 2.25, 6.25], [4.0, 1.0, 0.0, 1.0]]))  # centres 0..3
    expected = torch.cat(
        [torch.tensor([[0.25 / 9.0], [4.0 / 9.0]]), gaussians, torch.tensor([[0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])], dim=1
    )
    torch.testing.assert_close(geometry.radial, expected)
    # Unit vectors from source to target.
    torch.testing.assert_close(geometry.direction, torch.tensor([[-1.0, 0, 0], [0, 0, -1.0]]), atol=1e-5, rtol=0)
    # 1 / in-degree: atom 0 receives two edges, atoms 1 and 2 none (counted as 1).
    assert geometry.inverse_degree.flatten().tolist() == [0.5, 1.0, 1.0]


def test_node_update_is_phi_h_of_the_features_and_the_message_sum():
    # phi_h = Linear_2(SiLU(W [h, m] + b)), W's first block applied to h, its second to the message sum.
    layer = EGNNLayer(hidden=2).eval()
    with torch.no_grad():
        layer.node_mlp[0].weight.copy_(torch.tensor([[1.0, 0.0, 2.0, 0.0], [0.0, -1.0, 0.0, 1.0]]))
        layer.node_mlp[0].bias.copy_(torch.tensor([0.5, 0.0]))
        layer.node_mlp[-1].weight.copy_(torch.tensor([[1.0, 0.0], [1.0, -1.0]]))
        layer.node_mlp[-1].bias.copy_(torch.tensor([0.0, 1.0]))
        update = layer.node_update(torch.tensor([[1.0, 2.0]]), torch.tensor([[0.25, 3.0]]))
    # W [h, m] + b = [1 + 2 * 0.25 + 0.5, -2 + 3] = [2, 1]; SiLU(x) = x / (1 + exp(-x)).
    silu_2, silu_1 = 2.0 / (1.0 + math.exp(-2.0)), 1.0 / (1.0 + math.exp(-1.0))
    torch.testing.assert_close(update, torch.tensor([[silu_2, silu_2 - silu_1 + 1.0]]))


def test_edge_between_atoms_at_the_same_position_has_no_direction():
    # Two atoms at one point (a duplicated atom): the edge's direction is 0 / (0 + epsilon) = 0, not NaN,
    # so neither atom moves.
    layer = saturated_mover(coords_weight=1.0)
    pos = torch.tensor([[1.0, 2.0, 3.0], [1.0, 2.0, 3.0]])
    edge_index = torch.tensor([[0, 1], [1, 0]])
    edge_type = torch.zeros(2, dtype=torch.long)
    assert layer.geometry(pos, edge_index, edge_type).direction.tolist() == [[0.0, 0.0, 0.0]] * 2
    with torch.no_grad():
        _, moved = layer(torch.randn(2, 8), pos, edge_index, edge_type)
    assert moved.tolist() == pos.tolist()


@pytest.mark.parametrize("layers", [1, 2, 3])
def test_readout_edges_only_gives_the_same_logits(layers):
    """Scoring's pruned layers (only the messages that reach the ligand readout) give the full model's logits,
    on graphs wide enough that some protein atoms lie beyond the readout's reach."""
    batch = make_batch(seed=3, sizes=((6, 40), (5, 45), (8, 30)))
    into_ligand = batch.is_ligand[batch.edge_index[1]].sum()
    assert into_ligand < batch.edge_index.shape[1] / 2  # most messages reach no ligand atom in the last layer
    model = make_model(layers=layers, docking_prior=0.0)
    with torch.no_grad():
        reference = model(batch)
        model.readout_edges_only = True
        pruned = model(batch)
    torch.testing.assert_close(pruned, reference, atol=1e-6, rtol=1e-6)


def test_readout_nodes_reach_back_one_hop_per_layer():
    from model.egnn import readout_nodes

    # A chain 0 (ligand) - 1 - 2 - 3 - 4, both directions: each earlier layer reaches one atom further.
    edge_index = torch.tensor([[1, 0, 2, 1, 3, 2, 4, 3], [0, 1, 1, 2, 2, 3, 3, 4]])
    is_ligand = torch.tensor([True, False, False, False, False])
    needed = readout_nodes(edge_index, is_ligand, 3)
    assert [m.nonzero().squeeze(1).tolist() for m in needed] == [[0, 1, 2], [0, 1], [0]]
