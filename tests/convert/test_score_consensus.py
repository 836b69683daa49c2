"""`pecan score --docking-weight W` and `pecan predict --docking-weight W`: each ligand's poses ranked by the
consensus of the model and the docking score, the model's score unchanged, the same ranks on both paths, and
wrong weights or poses without a docking score refused before anything is written."""

import json

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("rdkit", reason="needs the convert extra: pip install -e '.[convert]'")
pytest.importorskip("prolif", reason="needs the convert extra: pip install -e '.[convert]'")

from pecan.commands import predict as predict_command
from pecan.commands import score as score_command
from pecan.convert.complexes import Options
from pecan.convert.examples import prolif_data, write_prolif_manifest
from pecan.convert.run import convert
from pecan.scoring.consensus import consensus

VINA = prolif_data() / "vina"


@pytest.fixture(scope="module")
def vina(trained_run, tmp_path_factory):
    """The tiny structure-only checkpoint, ProLIF's Vina poses with their scores, and their shards."""
    tmp = tmp_path_factory.mktemp("consensus")
    manifest = write_prolif_manifest(tmp / "prolif")
    convert(manifest, tmp / "shards", Options(), prefix="real", progress=False)
    index = pd.read_csv(tmp / "shards" / "real_all.csv", dtype=str, keep_default_na=False)  # pdbid: the complex
    index[index["pdbid"] == "vina"].to_csv(tmp / "shards" / "vina.csv", index=False)
    return tmp, trained_run.checkpoint, tmp / "prolif" / "vina_scored.sdf"


def score(checkpoint, poses, out, *extra):
    argv = [str(checkpoint), "--receptor", str(VINA / "rec.pdb"), "--poses", str(poses), "--complex-id", "vina"]
    argv += ["--score-property", "vina_score", "--receptor-hydrogens", "keep", "--device", "cpu"]
    return score_command.main([*argv, "--out", str(out), *extra])


def read(path):
    return pd.read_csv(path, dtype={"complex_id": str, "pose_id": str})


def test_the_consensus_ranks_the_poses_and_leaves_the_score(vina):
    tmp, checkpoint, poses = vina
    assert score(checkpoint, poses, tmp / "alone.sdf") == 0
    assert score(checkpoint, poses, tmp / "one.sdf", "--docking-weight", "1") == 0
    assert score(checkpoint, poses, tmp / "fifty.sdf", "--docking-weight", "50") == 0
    alone, one, fifty = read(tmp / "alone.csv"), read(tmp / "one.csv"), read(tmp / "fifty.csv")
    assert "pecan_consensus" not in alone and "pecan_consensus" in one
    by_pose = alone.merge(one, on="pose_id", suffixes=("_alone", ""), validate="one_to_one")
    assert len(by_pose) == len(alone) > 3
    np.testing.assert_allclose(by_pose["pecan_score"], by_pose["pecan_score_alone"], rtol=1e-9)
    p = one["pecan_score"].to_numpy()
    expected = consensus(np.log(p) - np.log1p(-p), one["docking_score"].to_numpy(), 1.0)
    np.testing.assert_allclose(one["pecan_consensus"], expected, atol=1e-6)
    assert one.sort_values("pecan_rank")["pecan_consensus"].is_monotonic_decreasing
    # a weight of 50 is the docking score's order (its ties aside), which the model alone does not follow
    assert fifty.sort_values("pecan_rank")["docking_score"].is_monotonic_increasing
    assert not alone.sort_values("pecan_rank")["docking_score"].is_monotonic_increasing
    sdf = (tmp / "one.sdf").read_text()
    assert sdf.count("<pecan_consensus>") == len(one) and "<pecan_consensus>" not in (tmp / "alone.sdf").read_text()
    assert json.loads((tmp / "one.metrics.json").read_text())["docking_weight"] == 1.0
    assert "docking_weight" not in json.loads((tmp / "alone.metrics.json").read_text())


def test_predict_ranks_the_shards_as_score_ranks_the_poses(vina):
    tmp, checkpoint, poses = vina
    assert score(checkpoint, poses, tmp / "w2.sdf", "--docking-weight", "2") == 0
    out = tmp / "w2_shards.csv"
    argv = [str(checkpoint), "--data-dir", str(tmp / "shards"), "--csv", "vina.csv", "--out", str(out)]
    assert predict_command.main([*argv, "--docking-weight", "2", "--device", "cpu"]) == 0
    scored, shards = read(tmp / "w2.csv"), read(out)
    both = scored.merge(shards, on=["complex_id", "pose_id"], suffixes=("", "_shards"), validate="one_to_one")
    assert len(both) == len(shards) == len(scored)
    assert (both["pecan_rank"] == both["pecan_rank_shards"]).all()
    np.testing.assert_allclose(both["pecan_consensus"], both["pecan_consensus_shards"], atol=1e-4)
    assert json.loads((tmp / "w2_shards.metrics.json").read_text())["docking_weight"] == 2.0


def test_a_wrong_weight_is_refused_naming_the_option(vina, capsys):
    tmp, checkpoint, poses = vina
    assert score(checkpoint, poses, tmp / "never.sdf", "--docking-weight", "-1") == 2
    assert "--docking-weight must be a finite number >= 0" in capsys.readouterr().err
    argv = [str(checkpoint), "--data-dir", str(tmp / "shards"), "--csv", "vina.csv", "--out", str(tmp / "never.csv")]
    assert predict_command.main([*argv, "--docking-weight", "nan"]) == 2
    assert "pecan predict: --docking-weight must be a finite number >= 0" in capsys.readouterr().err
    assert not (tmp / "never.sdf").exists() and not (tmp / "never.csv").exists()


def test_poses_without_a_docking_score_are_refused_under_a_weight(vina, capsys):
    tmp, checkpoint, _ = vina
    raw = VINA / "vina_output.sdf"  # ProLIF's poses without the score property
    argv = [str(checkpoint), "--receptor", str(VINA / "rec.pdb"), "--poses", str(raw), "--device", "cpu"]
    out = tmp / "raw.sdf"
    assert score_command.main([*argv, "--out", str(out), "--docking-weight", "1"]) == 2
    err = capsys.readouterr().err
    assert "--docking-weight 1 ranks by a consensus" in err and "'docking_score'" in err and "vina_output.sdf" in err
    assert not out.exists()
    assert score_command.main([*argv, "--out", str(out)]) == 0  # the structure-only model alone needs none
    shards = [str(checkpoint), "--data-dir", str(tmp / "shards"), "--csv", "real_all.csv", "--device", "cpu"]
    code = predict_command.main([*shards, "--out", str(tmp / "all.csv"), "--docking-weight", "1"])
    assert code == 1 and "pose(s) have none (first: complex 1s2g" in capsys.readouterr().err
    assert not (tmp / "all.csv").exists()
