"""The sgcnn, ggcnn and cnn3d variants: forward/backward, bf16, torch.compile, locality, configs."""

import dataclasses
from pathlib import Path

import numpy as np
import pytest
import torch

import model
from pecan import config as cfgmod
from pecan.data import layout
from tests.model.variant_batches import VARIANTS, features, graph_from_arrays, tiny_batch, tiny_model


@pytest.mark.parametrize("variant", VARIANTS)
def test_forward_backward_reaches_every_parameter(variant):
    net = tiny_model(variant)
    batch = tiny_batch()
    logits = net(batch)
    assert logits.shape == (3,) and logits.dtype == torch.float32 and torch.isfinite(logits).all()
    torch.nn.functional.binary_cross_entropy_with_logits(logits, batch.y).backward()
    missing = [name for name, p in net.named_parameters() if p.grad is None or not torch.isfinite(p.grad).all()]
    assert not missing, missing
    assert any(p.grad.abs().sum() > 0 for p in net.parameters())


@pytest.mark.parametrize("variant", VARIANTS)
def test_bf16_autocast_is_finite_and_close(variant):
    net = tiny_model(variant).eval()
    batch = tiny_batch()
    reference = net(batch)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        logits = net(batch)
    assert logits.dtype == torch.float32 and torch.isfinite(logits).all()
    assert torch.allclose(logits, reference, atol=0.1)


@pytest.mark.slow
@pytest.mark.parametrize("variant", VARIANTS)
def test_torch_compile_matches_eager(variant):
    # aot_eager runs dynamo and AOT autograd (what breaks on data-dependent shapes) without a C++ toolchain.
    torch._dynamo.reset()
    net = tiny_model(variant).eval()
    compiled = torch.compile(net, dynamic=True, backend="aot_eager")
    for graphs in (2, 3):
        batch = tiny_batch(graphs, seed=graphs)
        expected = net(batch)
        logits = compiled(batch)
        assert torch.allclose(logits, expected, atol=1e-5)
    logits.sum().backward()
    assert all(p.grad is not None for p in net.parameters())


def two_atom_neighbours(edge_cutoff=4.5):
    """Ligand atoms 0 and 1 at 1.2 A (a covalent-length pair), protein atom 2 at 3 A from atom 0,
    protein atom 3 far away from everything (no edge)."""
    pos = np.array([[0, 0, 0], [1.2, 0, 0], [0, 3.0, 0], [40, 40, 40]], dtype=np.float32)
    return features(4, n_ligand=2), pos


@pytest.mark.parametrize("variant", ["sgcnn", "ggcnn"])
@pytest.mark.parametrize("neighbour", [1, 2])
def test_graph_embedding_depends_on_neighbours_only(variant, neighbour):
    net = tiny_model(variant).eval()
    x, pos = two_atom_neighbours()
    base = net.embed(graph_from_arrays(x, pos))
    changed = x.copy()
    changed[neighbour, 9:13] += 1.0
    assert not torch.equal(net.embed(graph_from_arrays(changed, pos))[0], base[0])
    far = x.copy()
    far[3, 9:13] += 1.0
    assert torch.equal(net.embed(graph_from_arrays(far, pos))[0], base[0])


def test_cnn3d_output_depends_on_atoms_in_the_box_only():
    net = tiny_model("cnn3d").eval()
    x, pos = two_atom_neighbours()
    base = net(graph_from_arrays(x, pos))
    changed = x.copy()
    changed[2, 9:13] += 1.0
    assert not torch.equal(net(graph_from_arrays(changed, pos)), base)
    far = x.copy()
    far[3, 9:13] += 1.0
    assert torch.equal(net(graph_from_arrays(far, pos)), base)


def test_sgcnn_edge_sets_follow_the_cutoffs():
    net = tiny_model("sgcnn", covalent_cutoff=1.5, noncovalent_cutoff=3.5).eval()
    x, pos = two_atom_neighbours()
    batch = graph_from_arrays(x, pos)
    covalent, noncovalent = net.edge_sets(batch)
    assert sorted(map(tuple, covalent[0].t().tolist())) == [(0, 1), (1, 0)]
    assert covalent[1].max() < 1.5
    assert sorted(map(tuple, noncovalent[0].t().tolist())) == [(0, 1), (0, 2), (1, 0), (1, 2), (2, 0), (2, 1)]
    assert noncovalent[1].max() < 3.5


def test_sgcnn_uses_the_batch_van_der_waals_radii():
    net = tiny_model("sgcnn").eval()
    batch = tiny_batch()
    base = net(batch)
    batch.vdw = batch.vdw * 1.5
    assert not torch.allclose(net(batch), base)
    batch.vdw = torch.from_numpy(layout.element_vdw(batch.x.numpy()))  # the graph builder's, from the elements
    assert torch.allclose(net(batch), base)
    del batch.vdw  # a field of the contract (pecan.data.schema): the model reads it, it does not derive it
    with pytest.raises(AttributeError, match="vdw"):
        net(batch)


# ---------------------------------------------------------------------------- registry and config


def test_registry_table_lists_every_name_and_number():
    table = model.table()
    for name, number in (("cnn3d", 0), ("sgcnn", 1), ("ggcnn", 2), ("egnn", 3)):
        assert f"| `{name}` | {number} |" in table
        assert f"| `{name}` | {number} |" in model.__doc__


@pytest.mark.parametrize("variant,number", [("cnn3d", 0), ("sgcnn", 1), ("ggcnn", 2)])
def test_legacy_number_selects_the_variant_section(variant, number):
    config = cfgmod.from_dict({"data": {"data_dir": "d", "edge_cutoff": 8.0}, "model": {"nn_type": number}})
    assert type(config.model) is cfgmod.model_section_class(variant)
    assert config.model.name == variant and config.model.nn_type == number


@pytest.mark.parametrize(
    "key,value,owner", [("grid_size", 8, "cnn3d"), ("update_coords", True, "egnn"), ("gated_steps", 2, "ggcnn")]
)
def test_key_of_another_variant_is_an_error_naming_its_owner(key, value, owner):
    with pytest.raises(cfgmod.ConfigError, match=f"'model.{key}' is a key of the {owner} variant, not of sgcnn"):
        cfgmod.from_dict({"data": {"data_dir": "d"}, "model": {"name": "sgcnn", key: value}}, "run.yaml")


def test_unknown_variant_name_lists_valid_names():
    with pytest.raises(cfgmod.ConfigError, match="run.yaml.*valid: cnn3d, sgcnn, ggcnn, egnn"):
        cfgmod.from_dict({"data": {"data_dir": "d"}, "model": {"name": "transformer"}}, "run.yaml")


def test_sgcnn_cutoff_beyond_the_radius_graph_is_an_error():
    with pytest.raises(cfgmod.ConfigError, match="model.noncovalent_cutoff.*data.edge_cutoff 4.5"):
        cfgmod.from_dict({"data": {"data_dir": "d", "edge_cutoff": 4.5}, "model": {"name": "sgcnn"}})


@pytest.mark.parametrize(
    "bad,key", [({"grid_size": 2, "blocks": 2}, "model.grid_size"), ({"resolution": 0.0}, "model.resolution")]
)
def test_cnn3d_range_checks(bad, key):
    with pytest.raises(cfgmod.ConfigError, match=key):
        cfgmod.from_dict({"data": {"data_dir": "d"}, "model": {"name": "cnn3d", **bad}})


@pytest.mark.parametrize("variant", VARIANTS)
def test_variant_config_files_load_and_round_trip(variant, tmp_path):
    config = cfgmod.load(f"configs/{variant}.yaml")
    assert model.resolve_name(config.model.name) == variant
    cfgmod.save(config, tmp_path / "config.yaml")
    assert cfgmod.load(tmp_path / "config.yaml").to_dict() == config.to_dict()


def test_reference_documents_every_variant_key():
    from pecan.config.docs import describe

    text = describe()
    for variant in VARIANTS:
        for f in dataclasses.fields(model.config_class(variant)):
            assert f"| `model.{f.name}` ({variant}) |" in text
            assert f.metadata["doc"]


def test_variants_page_table_is_the_registry_table():
    text = (Path(__file__).resolve().parents[2] / "docs" / "variants.md").read_text()
    start, end = text.index("<!-- variant-table:start -->"), text.index("<!-- variant-table:end -->")
    assert text[start:end].split("\n", 1)[1].strip() == model.table()
