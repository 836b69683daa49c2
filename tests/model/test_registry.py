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
