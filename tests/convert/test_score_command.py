"""`pecan score`: docking output in (ProLIF's bundled structures), scored SDF out, the same scores as
converting to shards and running `pecan predict` on them."""

import json

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("rdkit", reason="needs the convert extra: pip install -e '.[convert]'")
pytest.importorskip("prolif", reason="needs the convert extra: pip install -e '.[convert]'")

from rdkit import Chem

from pecan.commands import predict as predict_command
from pecan.commands import score as score_command
from pecan.convert.complexes import Options
from pecan.convert.examples import prolif_data, write_prolif_manifest
from pecan.convert.run import convert


@pytest.fixture(scope="module")
def setup(trained_run, tmp_path_factory):
    """The session's tiny trained checkpoint, the ProLIF manifest, and the shard path's scores of its poses."""
    tmp = tmp_path_factory.mktemp("score")
    checkpoint = trained_run.checkpoint
    manifest = write_prolif_manifest(tmp / "prolif")
    convert(manifest, tmp / "shards", Options(), prefix="real", progress=False)
    shard_scores = tmp / "shard_scores.csv"
    assert (
        predict_command.main(
            [str(checkpoint), "--data-dir", str(tmp / "shards"), "--out", str(shard_scores), "--device", "cpu"]
        )
        == 0
    )
    return tmp, checkpoint, manifest, pd.read_csv(shard_scores)


def read_sdf(path):
    return [m for m in Chem.SDMolSupplier(str(path), removeHs=False)]


@pytest.mark.slow
def test_one_complex_in_scored_sdf_out(setup):
    tmp, checkpoint, _, shard_scores = setup
    data = prolif_data() / "vina"
    out = tmp / "vina_scored_by_pecan.sdf"
    code = score_command.main(
        [
            str(checkpoint),
            "--receptor",
            str(data / "rec.pdb"),
            "--poses",
            str(tmp / "prolif" / "vina_scored.sdf"),
            "--crystal",
            str(data / "lig.pdb"),
            "--complex-id",
            "vina",
            "--score-property",
            "vina_score",
            "--out",
            str(out),
            "--device",
            "cpu",
        ]
    )
    assert code == 0
    mols = read_sdf(out)
    assert len(mols) == 9
    scores = [m.GetDoubleProp("pecan_score") for m in mols]
    assert scores == sorted(scores, reverse=True)
    assert [m.GetIntProp("pecan_rank") for m in mols] == list(range(1, 10))
    assert all(m.HasProp("rmsd") and m.HasProp("label") for m in mols)
    assert all(m.GetIntProp("label") == int(m.GetDoubleProp("rmsd") < 2.0) for m in mols)
    assert all(m.HasProp("vina_score") for m in mols)  # the input's own properties travel along
    vina = shard_scores[shard_scores["complex_id"] == "vina"].set_index("pose_id")
    for mol in mols:
        pose = mol.GetProp("pecan_pose")
        assert mol.GetDoubleProp("pecan_score") == pytest.approx(vina.loc[pose, "pecan_score"], rel=1e-6)
    assert (tmp / "vina_scored_by_pecan.csv").exists()
    assert json.loads((tmp / "vina_scored_by_pecan.metrics.json").read_text())["labeled"] is True


@pytest.mark.slow
def test_manifest_scores_equal_the_shard_path(setup):
    tmp, checkpoint, manifest, shard_scores = setup
    out = tmp / "all.sdf"
    argv = [str(checkpoint), "--manifest", str(manifest), "--out", str(out), "--device", "cpu"]
    # 1s2g's receptor has no hydrogens: `pecan convert` takes it as given, and so must the score compared
    assert score_command.main([*argv, "--receptor-hydrogens", "keep"]) == 0
    scores = pd.read_csv(tmp / "all.csv")
    merged = scores.merge(shard_scores, on=["complex_id", "pose_id"], suffixes=("", "_shards"), validate="one_to_one")
    assert len(merged) == len(shard_scores) == 10
    np.testing.assert_allclose(merged["pecan_score"], merged["pecan_score_shards"], rtol=1e-6)
    assert (merged["pecan_rank"] == merged["pecan_rank_shards"]).all() and set(scores["split"]) == {"test"}
    mols = read_sdf(out)
    assert [m.GetProp("pecan_complex") for m in mols] == ["vina"] * 9 + ["1s2g"]


def test_bad_invocations_exit_2(setup, capsys):
    tmp, checkpoint, manifest, _ = setup
    assert score_command.main([str(checkpoint), "--out", str(tmp / "x.sdf")]) == 2
    assert "--receptor and --poses" in capsys.readouterr().err
    assert score_command.main([str(tmp / "missing.pt"), "--manifest", str(manifest), "--out", str(tmp / "x.sdf")]) == 2
    assert not (tmp / "x.sdf").exists()
