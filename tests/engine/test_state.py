"""The typed checkpoint (pecan/engine/state.py): one state written and read once, a plain dict on disk, older
unversioned files loaded unchanged, foreign and newer files refused naming the file."""

from pathlib import Path

import pytest
import torch

from pecan.engine.state import FORMAT_VERSION, TRAINING_ONLY, CheckpointState
from pecan.runtime.errors import ConfigError


def _weights():
    return {"layer.weight": torch.arange(6.0).reshape(2, 3), "layer.bias": torch.zeros(2)}


def _state(**changes):
    values = dict(
        model=_weights(),
        model_config={"name": "egnn", "hidden": 8},
        config={"data": {"pocket_radius": 6.0}, "model": {"name": "egnn"}},
        config_digest="abc123",
        feature_layout="v2",
        sample_settings={"data.pocket_radius": 6.0},
        complexes={"train": ["1abc"], "val": ["2xyz"]},
        training_data={"kind": "real", "docking_score": {"property": "vina"}},
        epoch=3,
        step=30,
        best_auc=0.75,
        metrics={"val_auc": 0.75},
        optimizer={"state": {}, "param_groups": []},
        rng={"torch": torch.get_rng_state()},
        records='[{"epoch": 1}]',
    )
    values.update(changes)
    return CheckpointState(**values)


def test_round_trip_through_a_plain_weights_only_file(tmp_path):
    path = _state().save(tmp_path / "last.pt")
    raw = torch.load(path, map_location="cpu", weights_only=True)
    assert type(raw) is dict and raw["format_version"] == FORMAT_VERSION
    assert raw["sample_settings"] == {"data.pocket_radius": 6.0} and raw["best_auc"] == 0.75
    assert "position" not in raw and "scheduler" not in raw  # entries the state does not hold are not written
    loaded = CheckpointState.load(path)
    assert loaded.training_data == {"kind": "real", "docking_score": {"property": "vina"}}
    assert loaded.docking_score_record == {"property": "vina"} and loaded.saved_section("data") == {
        "pocket_radius": 6.0
    }
    assert (loaded.epoch, loaded.step, loaded.records, loaded.extra) == (3, 30, '[{"epoch": 1}]', {})
    assert all(torch.equal(loaded.model[k], v) for k, v in _weights().items())
    assert torch.equal(loaded.rng["torch"], raw["rng"]["torch"])


def test_an_older_checkpoint_without_a_version_loads_unchanged(tmp_path):
    old = _state().to_dict()
    del old["format_version"]
    old["removed_entry"] = 1  # an entry this version does not name survives a read and a write
    torch.save(old, tmp_path / "old.pt")
    state = CheckpointState.load(tmp_path / "old.pt")
    assert state.model_config == {"name": "egnn", "hidden": 8} and state.complexes["val"] == ["2xyz"]
    assert state.extra == {"removed_entry": 1}
    again = state.to_dict()
    assert again["removed_entry"] == 1 and again["format_version"] == FORMAT_VERSION


LEGACY = Path(__file__).parent / "fixtures" / "legacy_corpus_egnn.pt"
"""The model pecan/pretrained shipped before the distilled student: a checkpoint written before format_version."""


def test_a_checkpoint_that_predates_the_version_loads():
    raw = torch.load(LEGACY, map_location="cpu", weights_only=True)
    assert "format_version" not in raw
    state = CheckpointState.load(LEGACY)
    assert state.model_config["name"] == "egnn" and state.training_data["kind"] == "real"
    assert state.optimizer is None and state.extra == {}


@pytest.mark.parametrize(
    "foreign",
    [{"state_dict": _weights(), "epoch": 3}, {"model": torch.zeros(3)}, {}],
    ids=["other-trainer", "model-not-weights", "empty"],
)
def test_a_foreign_dict_is_not_a_pecan_checkpoint(tmp_path, foreign):
    path = tmp_path / "foreign.pt"
    torch.save(foreign, path)
    with pytest.raises(ValueError, match=f"not a PECAN checkpoint: {path}"):
        CheckpointState.load(path)


@pytest.mark.parametrize("version", ["1", True, 0])
def test_a_version_that_is_not_one_of_ours_is_foreign(version):
    with pytest.raises(ValueError, match="not a PECAN checkpoint: x.pt .*format_version"):
        CheckpointState.from_dict({"model": _weights(), "format_version": version}, "x.pt")


def test_a_newer_format_is_refused_naming_both_versions(tmp_path):
    path = tmp_path / "new.pt"
    torch.save({**_state().to_dict(), "format_version": FORMAT_VERSION + 1}, path)
    with pytest.raises(
        ValueError, match=f"{path} has format version {FORMAT_VERSION + 1}, newer than .*\\({FORMAT_VERSION}\\)"
    ):
        CheckpointState.load(path)


def test_a_scoring_only_state_keeps_what_scoring_reads():
    slim = _state(position={"done": 2}, extra={"removed_entry": 1}).for_scoring()
    assert all(getattr(slim, key) is None for key in TRAINING_ONLY) and slim.extra == {}
    assert slim.sample_settings and slim.feature_layout == "v2" and slim.epoch == 3
    with pytest.raises(KeyError, match="optimizer"):
        slim.require("optimizer")


def test_scoring_and_init_from_name_a_foreign_file(tmp_path):
    from pecan.scoring.checkpoint import read_checkpoint
    from pecan.train.build import load_initial_weights

    path = tmp_path / "foreign.pt"
    torch.save({"state_dict": _weights()}, path)
    with pytest.raises(ConfigError, match=f"cannot score with {path}: not a PECAN checkpoint: {path}"):
        read_checkpoint(path)
    with pytest.raises(ConfigError, match=f"train.init_from: not a PECAN checkpoint: {path}"):
        load_initial_weights(torch.nn.Linear(3, 2), str(path), config=None)


@pytest.mark.parametrize("entries", [{"state_dict": {}}, {"model": {}, "format_version": FORMAT_VERSION + 1}])
def test_pecan_predict_exits_2_on_a_foreign_or_newer_file(tmp_path, capsys, entries):
    from pecan.commands import predict

    path = tmp_path / "other.pt"
    torch.save(entries, path)
    assert predict.main([str(path), "--data-dir", str(tmp_path), "--out", str(tmp_path / "s.csv")]) == 2
    err = capsys.readouterr().err
    assert f"not a PECAN checkpoint: {path}" in err or f"{path} has format version" in err
    assert not (tmp_path / "s.csv").exists()
