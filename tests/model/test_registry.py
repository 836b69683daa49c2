"""Tests for the model registry: names, legacy numbers, errors and lazy imports."""

import subprocess
import sys
from pathlib import Path

import pytest

import model

REPOSITORY_ROOT = Path(__file__).resolve().parents[2]


def test_every_registered_variant_is_available():
    assert model.available() == ["cnn3d", "sgcnn", "ggcnn", "egnn"]


@pytest.mark.parametrize("name", ["egnn", "EGNN", " egnn "])
def test_resolve_by_name(name):
    assert model.resolve_name(name) == "egnn"


def test_resolve_by_legacy_number():
    assert model.resolve_name(nn_type=3) == "egnn"
    assert model.resolve_name(nn_type=1) == "sgcnn"
    assert model.resolve_name("egnn", nn_type=3) == "egnn"


def test_unknown_name_lists_valid_names():
    with pytest.raises(ValueError) as error:
        model.resolve_name("transformer")
    for name in model.available():
        assert name in str(error.value)


def test_unknown_number_lists_valid_numbers():
    with pytest.raises(ValueError, match="3 \\(egnn\\)"):
        model.resolve_name(nn_type=42)


def test_number_overrides_name():
    assert model.resolve_name("egnn", nn_type=1) == "sgcnn"
    assert model.resolve_name("sgcnn", nn_type=3) == "egnn"


def test_nothing_selected_is_an_error():
    with pytest.raises(ValueError, match="egnn"):
        model.resolve_name()


def test_build_model_returns_egnn_classifier():
    from model.egnn import EGNNClassifier, EGNNConfig

    built = model.build_model(None, EGNNConfig(hidden=16, layers=1), nn_type=3)
    assert isinstance(built, EGNNClassifier)
    assert built.embedding.out_features == 16


def run_fresh(code):
    """Run ``code`` in a fresh interpreter at the repository root; return its stdout."""
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPOSITORY_ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    return result.stdout.strip()


def test_importing_registry_does_not_import_variants():
    code = (
        "import sys, model\n"
        "model.resolve_name('egnn')\n"
        "prefixes = ('model.', 'torch_geometric')\n"
        "print(sorted(name for name in sys.modules if name.startswith(prefixes)))\n"
    )
    assert run_fresh(code) == "[]"


@pytest.mark.slow
def test_building_a_variant_imports_only_that_variant():
    code = (
        "import sys, types, model\n"
        "settings = types.SimpleNamespace(hidden=8, layers=1, attention=True, update_coords=False,\n"
        "                                 use_pose_features=True, dropout=0.0, rbf=16, cutoff=4.5)\n"
        "model.build_model('egnn', settings)\n"
        "print(' '.join(sorted(sys.modules)))\n"
    )
    imported = set(run_fresh(code).split())
    assert "model.egnn" in imported
    assert imported.isdisjoint({"model.sgcnn", "model.ggcnn", "model.cnn3d"})


@pytest.fixture
def fake_variant(monkeypatch):
    """Register the test-only ``fake`` variant (no legacy number) for one test."""
    from pecan import config as cfgmod

    entry = model.Variant(
        "fake",
        "tests.model.fake_variant",
        "tests.model.fake_variant:FakeConfig",
        "a test variant",
        augment_key="jitter",
        sample_keys=("width",),
    )
    monkeypatch.setattr(model, "_VARIANTS", (*model._VARIANTS, entry))
    monkeypatch.setattr(model, "_BY_NAME", {**model._BY_NAME, "fake": entry})
    monkeypatch.setattr(cfgmod, "_VARIANT_SECTIONS", {})
    return entry


def test_a_new_variant_is_a_module_and_a_row(fake_variant):
    """Loading, checks, capabilities, docs, checkpoint settings and building all read the registry row."""
    from pecan import config as cfgmod
    from pecan.config.docs import describe
    from pecan.engine.pins import sample_settings

    config = cfgmod.from_dict({"data": {"data_dir": "d"}, "model": {"name": "fake", "width": 3, "jitter": True}})
    assert type(config.model).__name__ == "FakeConfigSection" and config.model.width == 3
    assert model.augments_inputs(config.model) and not model.augments_inputs(cfgmod.ModelConfig())
    with pytest.raises(cfgmod.ConfigError, match="'model.width' must be >= 1, got 0"):
        cfgmod.from_dict({"data": {"data_dir": "d"}, "model": {"name": "fake", "width": 0}})
    with pytest.raises(cfgmod.ConfigError, match="'model.hidden' is a key of the egnn variant"):
        cfgmod.from_dict({"data": {"data_dir": "d"}, "model": {"name": "fake", "hidden": 3}})
    assert "| `model.width` (fake) | int | `4` | Width of the only layer. |" in describe()
    assert sample_settings(config)["model.width"] == 3
    assert model.build_model("fake", config.model).in_features == 3
    assert "| `fake` |  | `tests.model.fake_variant` | a test variant |" in model.table()
    with pytest.raises(ValueError, match="3 \\(egnn\\)") as error:
        model.resolve_name(nn_type=4)
    assert "fake" not in str(error.value)  # no legacy number: nothing to list


def test_the_egnn_goes_through_the_same_path():
    from model.egnn_config import EGNNConfig
    from pecan import config as cfgmod

    assert model.config_class("egnn") is EGNNConfig and issubclass(cfgmod.ModelConfig, EGNNConfig)
    assert cfgmod.model_section_class("egnn") is cfgmod.ModelConfig
    assert model.problems(cfgmod.ModelConfig(layers=0), None) == ["'model.layers' must be >= 1, got 0"]


@pytest.mark.parametrize("name", model.available())
def test_build_model_gives_every_variant_the_contract_sizes(monkeypatch, name):
    """The sizes reach each variant through the registry (pecan.data.schema.input_sizes), not from defaults."""
    from pecan import config as cfgmod
    from pecan.data import schema
    from tests.model.variant_batches import TINY

    sizes = {"in_features": 7, "edge_types": 5, "pose_features": 2}
    monkeypatch.setattr(schema, "input_sizes", lambda: dict(sizes))
    section = cfgmod.model_section_class(name)(name=name, **TINY.get(name, {}))
    built = model.build_model(name, section)
    weights = {key: value.shape for key, value in built.state_dict().items()}
    if name == "egnn":
        assert built.embedding.in_features == 7 and built.layers[0].edge_type_embedding.num_embeddings == 5
        assert built.head[0].in_features == 2 * section.hidden + 2
    elif name == "sgcnn":
        assert built.embedding.in_features == 7 + 1  # the atom features and the van der Waals radius
        assert weights["covalent.0.edge_type_embedding.weight"][0] == 5
        assert built.head[0].in_features == section.noncovalent_gather_width + 2
    elif name == "ggcnn":
        assert built.embedding.in_features == 7 and weights["conv.weight"][0] == 5
        assert built.head[0].in_features == 2 * section.gated_width + 2
    else:
        assert weights["convolutions.0.weight"][1] == 7  # one grid channel per atom feature
        assert built.head[0].in_features == section.channels * 2 ** (section.blocks - 1) + 2


def test_a_removed_key_loads_with_a_warning_naming_it(caplog):
    from pecan import config as cfgmod

    assert model.removed_keys("ggcnn") == {"edge_types": "the edge labels are the input contract's edge types"}
    with caplog.at_level("WARNING", logger="pecan.config"):
        config = cfgmod.from_dict({"data": {"data_dir": "d"}, "model": {"name": "ggcnn", "edge_types": 3}}, "old.yaml")
    assert not hasattr(config.model, "edge_types")
    assert "old.yaml: 'model.edge_types' is no longer a key of ggcnn" in caplog.text and "3 is ignored" in caplog.text
    assert model.build_model("ggcnn", config.model).conv.edge_types == 3  # the contract's
    # Only the variant that had the key forgives it.
    with pytest.raises(cfgmod.ConfigError, match="unknown key 'model.edge_types'"):
        cfgmod.from_dict({"data": {"data_dir": "d"}, "model": {"name": "egnn", "edge_types": 3}})


def test_stored_sections_compare_without_removed_keys():
    stored = {"name": "ggcnn", "gated_width": 8, "edge_types": 3}
    assert model.without_removed_keys(stored) == {"name": "ggcnn", "gated_width": 8}
    assert model.without_removed_keys({"nn_type": 2, "edge_types": 3}) == {"nn_type": 2}
    assert model.without_removed_keys({"name": "egnn", "edge_types": 3}) == {"name": "egnn", "edge_types": 3}
    assert model.without_removed_keys({"name": "gone", "edge_types": 3}) == {"name": "gone", "edge_types": 3}
