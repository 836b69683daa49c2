"""Release tooling (release/): the shipped model's card agrees with its checkpoint, and a slimmed checkpoint
keeps what scoring reads, with portable paths, and still scores."""

import json

import pytest
import torch

from pecan import pretrained
from pecan.engine.state import CheckpointState
from release import card as card_tool
from release import checkpoint


def _shipped():
    return torch.load(pretrained.CHECKPOINT, map_location="cpu", weights_only=True)


def test_the_model_card_repeats_the_checkpoints_config():
    card = pretrained.CARD.read_text()
    state = CheckpointState.from_dict(_shipped())
    assert card_tool.config_in_card(card) == json.loads(json.dumps(card_tool.card_config(state)))
    assert f"{sum(int(v.numel()) for v in state.model.values()):,} parameters" in card
    for reserved in ("TYK2", "thrombin", "MCL1", "PTP1B", "PDE2A"):
        assert reserved in card


def test_the_card_states_what_the_checkpoint_records_of_its_training_data():
    """Complexes trained on, poses, complexes held out to choose the epoch: the card's figures are the checkpoint's."""
    card = pretrained.CARD.read_text()
    data = card_tool.trained_on(CheckpointState.from_dict(_shipped()))
    assert data["complexes"] + data["held_out"] > data["complexes"] > 0 and data["poses"] > 0
    assert f"Trained on {data['complexes']} public crystal complexes" in card
    assert f"({data['poses']:,} poses;" in card and f"{data['held_out']} more docked complexes were held out" in card
    assert "trained on every corpus complex" not in card


def test_portable_config_makes_paths_under_the_root_relative_and_keeps_others(tmp_path):
    config = {
        "data": {"data_dir": str(tmp_path / "work" / "shards"), "train_csvs": [str(tmp_path / "a.csv"), "b.csv"]},
        "train": {"out_dir": "/elsewhere/run", "lr": 0.1},
        "model": {"hidden": 8},
    }
    portable = checkpoint.portable_config(config, tmp_path)
    assert portable["data"] == {"data_dir": "work/shards", "train_csvs": ["a.csv", "b.csv"]}
    assert portable["train"] == {"out_dir": "/elsewhere/run", "lr": 0.1} and portable["model"] == {"hidden": 8}
    assert config["data"]["data_dir"] == str(tmp_path / "work" / "shards")  # the input is not changed


def test_a_card_without_a_config_block_is_an_error():
    with pytest.raises(ValueError, match="json block"):
        card_tool.config_in_card("# a card\nno block here\n")


def test_slim_checkpoint_drops_training_state_and_still_scores(trained_run, tmp_path):
    from pecan.commands import predict as predict_command

    slim = checkpoint.slim_checkpoint(trained_run.checkpoint, tmp_path / "slim.pt")
    full = torch.load(trained_run.checkpoint, map_location="cpu", weights_only=True)
    state = torch.load(slim, map_location="cpu", weights_only=True)
    assert "optimizer" in full and "optimizer" not in state and "rng" not in state
    assert all(torch.equal(state["model"][k], full["model"][k]) for k in full["model"])
    out = tmp_path / "scores.csv"
    data_dir = trained_run.shared_data()["data.data_dir"]
    assert predict_command.main([str(slim), "--data-dir", data_dir, "--out", str(out), "--device", "cpu"]) == 0
    assert out.exists()
