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
    from pecan.scoring.settings import sample_settings

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
