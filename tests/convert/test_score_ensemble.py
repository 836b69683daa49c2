"""`pecan score A.pt B.pt`: an ensemble scores docking output as `pecan predict A.pt B.pt` scores its shards,
and members that read different docking-score inputs are refused before anything is scored."""

import json

import pandas as pd
import pytest
import torch

pytest.importorskip("rdkit", reason="needs the convert extra: pip install -e '.[convert]'")
pytest.importorskip("prolif", reason="needs the convert extra: pip install -e '.[convert]'")

from pecan.commands import predict as predict_command
from pecan.commands import score as score_command
from pecan.convert.complexes import Options
from pecan.convert.examples import write_prolif_manifest
from pecan.convert.run import convert
from pecan.train import checkpoint as ckpt


@pytest.fixture(scope="module")
def members(trained_run, tmp_path_factory):
    """The tiny trained checkpoint, a second member (its weights moved), the ProLIF manifest and its shards."""
    tmp = tmp_path_factory.mktemp("score_ensemble")
    state = ckpt.load_checkpoint(trained_run.checkpoint)
    generator = torch.Generator().manual_seed(5)
    moved = {
        name: value + 0.3 * torch.randn(value.shape, generator=generator) if value.is_floating_point() else value
        for name, value in state["model"].items()
    }
    ckpt.save_checkpoint(tmp / "second.pt", dict(state, model=moved))
    manifest = write_prolif_manifest(tmp / "prolif")
    convert(manifest, tmp / "shards", Options(), prefix="real", progress=False)
    return tmp, trained_run.checkpoint, tmp / "second.pt", manifest


def test_score_with_an_ensemble_equals_predict_with_it(members):
    tmp, first, second, manifest = members
    shard_scores = tmp / "shards.csv"
    argv = [str(first), str(second), "--data-dir", str(tmp / "shards"), "--out", str(shard_scores)]
    assert predict_command.main([*argv, "--device", "cpu"]) == 0
    out = tmp / "ensemble.sdf"
    keep = ["--receptor-hydrogens", "keep", "--device", "cpu"]  # 1s2g's receptor as the converter took it
    code = score_command.main([str(first), str(second), "--manifest", str(manifest), "--out", str(out), *keep])
    assert code == 0
    scored = pd.read_csv(tmp / "ensemble.csv", dtype={"complex_id": str, "pose_id": str})
    expected = pd.read_csv(shard_scores, dtype={"complex_id": str, "pose_id": str})
    merged = scored.merge(expected, on=["complex_id", "pose_id"], suffixes=("", "_shards"), validate="one_to_one")
    assert len(merged) == len(expected) > 0
    assert (merged["pecan_score"] - merged["pecan_score_shards"]).abs().max() < 1e-5
    alone = tmp / "alone.sdf"
    assert score_command.main([str(first), "--manifest", str(manifest), "--out", str(alone), *keep]) == 0
    single = pd.read_csv(tmp / "alone.csv", dtype={"complex_id": str, "pose_id": str})
    both = single.merge(scored, on=["complex_id", "pose_id"], suffixes=("_alone", ""), validate="one_to_one")
    assert len(both) == len(scored)  # the same poses, pose by pose: the second member moves every score
    assert (both["pecan_score_alone"] - both["pecan_score"]).abs().min() > 1e-4
    values = json.loads((tmp / "ensemble.metrics.json").read_text())
    assert values["checkpoints"] == [str(first), str(second)] and "checkpoint" not in values


def test_members_with_different_docking_score_inputs_are_refused(members, capsys):
    tmp, first, _, manifest = members
    state = ckpt.load_checkpoint(first)
    assert not state["model_config"]["use_docking_score"]  # the tiny model reads no docking score
    other = dict(
        state,
        model_config={**state["model_config"], "use_docking_score": True},
        training_data={**state["training_data"], "docking_score": {"property": "minimizedAffinity"}},
    )
    ckpt.save_checkpoint(tmp / "other_property.pt", other)
    out = tmp / "never.sdf"
    argv = [str(first), str(tmp / "other_property.pt"), "--manifest", str(manifest), "--out", str(out)]
    assert score_command.main(argv) == 2
    err = capsys.readouterr().err
    assert "members read different docking-score inputs" in err and "other_property.pt" in err
    assert "'minimizedAffinity'" in err and not out.exists()
    assert (
        score_command.main([str(first), str(tmp / "missing.pt"), "--manifest", str(manifest), "--out", str(out)]) == 2
    )
    assert "missing.pt: file not found" in capsys.readouterr().err
