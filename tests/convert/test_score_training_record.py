"""What a checkpoint records of its training data, and how `pecan score` uses it: the SD property of the
docking scores a model takes as input (the default of --score-property; a pose file without it is refused),
and whether the model learnt from synthetic demo data (a warning when it scores real poses)."""

import pytest

pytest.importorskip("rdkit", reason="needs the convert extra: pip install -e '.[convert]'")
pytest.importorskip("prolif", reason="needs the convert extra: pip install -e '.[convert]'")

import pandas as pd
import torch

import main_app
from pecan.commands import score as score_command
from pecan.convert.complexes import Options
from pecan.convert.examples import prolif_data, write_prolif_manifest
from pecan.convert.run import convert
from pecan.engine.pins import score_property_default, training_data_record
from pecan.engine.state import CheckpointState
from pecan.train.checkpoint import load_checkpoint
from tests.configs import make_config

VINA = prolif_data() / "vina"


@pytest.fixture(scope="module")
def docking_model(tmp_path_factory):
    """Two epochs of a model that takes the docking score (and its prior) on the converted ProLIF data."""
    tmp = tmp_path_factory.mktemp("docking_model")
    manifest = write_prolif_manifest(tmp / "prolif")
    convert(manifest, tmp / "shards", Options(), progress=False)
    settings = {
        "data": {"data_dir": str(tmp / "shards"), "train_csvs": ["converted_all.csv"], "val_fraction": 0.5},
        "data.batch_size": 4,
        "data.num_workers": 0,
        "model.use_docking_score": True,
        "model.docking_prior": 5.0,
    }
    path, _ = make_config(tmp, settings, dataset={})
    assert main_app.main([str(path)]) == 0
    return tmp, tmp / "run" / "checkpoints" / "last.pt"


def score(checkpoint, poses, out, *extra):
    argv = [str(checkpoint), "--receptor", str(VINA / "rec.pdb"), "--poses", str(poses), "--complex-id", "vina"]
    return score_command.main([*argv, "--out", str(out), "--device", "cpu", *extra])


@pytest.mark.slow
def test_checkpoint_records_the_docking_score_property_and_real_data(docking_model):
    _, checkpoint = docking_model
    record = load_checkpoint(checkpoint)["training_data"]
    assert record["kind"] == "real" and len(record["index_digest"]) == 16
    assert record["docking_score"] == {
        "property": "vina_score",
        "properties": ["vina_score"],
        "lower_is_better": True,
        "model_input": True,
    }


@pytest.mark.slow
def test_score_reads_the_property_from_the_checkpoint(docking_model):
    tmp, checkpoint = docking_model
    poses = tmp / "prolif" / "vina_scored.sdf"
    assert score(checkpoint, poses, tmp / "named.sdf", "--score-property", "vina_score") == 0
    assert score(checkpoint, poses, tmp / "default.sdf") == 0
    named, default = pd.read_csv(tmp / "named.csv"), pd.read_csv(tmp / "default.csv")
    assert default["docking_score"].notna().all()
    pd.testing.assert_frame_equal(named, default)


def test_poses_without_the_property_are_refused_naming_it_and_the_file(docking_model, capsys):
    tmp, checkpoint = docking_model
    code = score(checkpoint, VINA / "vina_output.sdf", tmp / "raw.sdf")
    err = capsys.readouterr().err
    assert code == 2 and "'vina_score'" in err and "vina_output.sdf" in err and "--score-property" in err
    assert not (tmp / "raw.sdf").exists()


@pytest.mark.slow
def test_old_checkpoint_falls_back_to_docking_score(docking_model, capsys):
    tmp, checkpoint = docking_model
    state = load_checkpoint(checkpoint)
    del state["training_data"]
    old = tmp / "old.pt"
    torch.save(state, old)
    assert score_property_default(CheckpointState.load(old)) == ("docking_score", True)
    assert score(old, tmp / "prolif" / "vina_scored.sdf", tmp / "old.sdf") == 2
    assert "'docking_score'" in capsys.readouterr().err
    assert score(old, tmp / "prolif" / "vina_scored.sdf", tmp / "old.sdf", "--score-property", "vina_score") == 0


@pytest.mark.slow
def test_synthetic_model_warns_when_scoring_real_poses(trained_run, tmp_path, caplog):
    state = load_checkpoint(trained_run.checkpoint)
    assert state["training_data"]["kind"] == "real"  # the tiny run's shards are not the synthetic generator's
    assert score_property_default(CheckpointState.from_dict(state)) == ("", False)
    state["training_data"]["kind"] = "synthetic"
    synthetic = tmp_path / "synthetic.pt"
    torch.save(state, synthetic)
    poses = tmp_path / "poses.sdf"
    poses.write_bytes((VINA / "vina_output.sdf").read_bytes())
    assert score(synthetic, poses, tmp_path / "s.sdf", "--crystal", str(VINA / "lig.pdb")) == 0
    warnings = [r.getMessage() for r in caplog.records if "synthetic demo data" in r.getMessage()]
    assert len(warnings) == 1 and str(synthetic) in warnings[0]


def test_training_record_says_synthetic(trained_run, tmp_path):
    frame = pd.DataFrame({"shard": [str(tmp_path / "s.hdf5")], "complex_id": ["a"], "pose_id": ["1"], "label": [1]})
    assert training_data_record(trained_run.config, frame)["kind"] == "real"
    (tmp_path / ".synthetic.json").write_text("{}")  # the generator's marker beside the shards
    assert training_data_record(trained_run.config, frame)["kind"] == "synthetic"


def test_synthetic_marker_is_the_generators():
    from pecan.engine.pins import SYNTHETIC_MARKER
    from pecan.synthetic.writer import MARKER_NAME

    assert SYNTHETIC_MARKER == MARKER_NAME


def test_training_record_says_synthetic_for_the_generator_config(trained_run):
    import dataclasses

    config = trained_run.config
    config = dataclasses.replace(config, synthetic=dataclasses.replace(config.synthetic, enabled=True))
    frame = pd.DataFrame({"shard": ["s.hdf5"], "complex_id": ["a"], "pose_id": ["1"], "label": [0]})
    assert training_data_record(config, frame)["kind"] == "synthetic"


def test_predict_warns_only_for_shards_that_are_not_synthetic(trained_run, tmp_path, caplog):
    import shutil

    from pecan.commands import predict as predict_command

    state = load_checkpoint(trained_run.checkpoint)
    state["training_data"]["kind"] = "synthetic"
    torch.save(state, tmp_path / "synthetic.pt")
    shutil.copytree(trained_run.root / "data", tmp_path / "data")
    argv = [str(tmp_path / "synthetic.pt"), "--data-dir", str(tmp_path / "data"), "--device", "cpu", "--out"]
    assert predict_command.main([*argv, str(tmp_path / "real.csv")]) == 0
    assert caplog.text.count("trained on synthetic demo data") == 1
    caplog.clear()
    (tmp_path / "data" / ".synthetic.json").write_text("{}")
    assert predict_command.main([*argv, str(tmp_path / "synthetic.csv")]) == 0
    assert "trained on synthetic demo data" not in caplog.text
