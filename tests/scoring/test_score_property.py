"""Where each pose's docking score is read from: a manifest row's own ``score_property`` wins; the
command line's ``--score-property`` (else the checkpoint's property) fills the rows that leave it empty."""

from pathlib import Path

import pandas as pd
import pytest

from pecan.engine.state import CheckpointState
from pecan.scoring.poses import ScoreRequest, manifest_rows, poses_files

SHIPPED_STATE = CheckpointState(
    model={}, model_config={"use_docking_score": True}, training_data={"docking_score": {"property": "dock"}}
)


def manifest(tmp_path: Path, properties: list[str]) -> Path:
    rows = [
        {"complex_id": f"c{k}", "receptor": "rec.pdb", "poses": f"p{k}.sdf", "score_property": prop}
        for k, prop in enumerate(properties)
    ]
    path = tmp_path / "manifest.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


@pytest.mark.parametrize("given, expected", [(None, ["own", "dock"]), ("cli", ["own", "cli"])])
def test_a_rows_own_property_wins_and_the_command_line_fills_the_rest(tmp_path, given, expected):
    request = ScoreRequest("c.pt", str(tmp_path / "o.sdf"), manifest=str(manifest(tmp_path, ["own", ""])))
    request = ScoreRequest(**{**request.__dict__, "score_property": given})
    rows = manifest_rows(request, SHIPPED_STATE)
    assert rows["score_property"].tolist() == expected
    assert [item.score_property for item in poses_files(request, rows)] == expected


@pytest.mark.slow
def test_scoring_a_manifest_reads_each_rows_own_property(tmp_path):
    """Row c0's file has only ``vina_score`` (its row's property), row c1's only ``alt`` (the command line's):
    both score, each docking score from its own property."""
    pytest.importorskip("prolif", reason="needs the convert extra: pip install -e '.[convert]'")
    from rdkit import Chem

    from pecan.commands import score as score_command
    from pecan.convert.examples import prolif_data, vina_poses_with_scores
    from pecan.scoring.scores_csv import read_scores

    vina = vina_poses_with_scores(tmp_path / "p0.sdf")
    with Chem.SDWriter(str(tmp_path / "p1.sdf")) as writer:
        for mol in Chem.SDMolSupplier(str(vina), removeHs=False):
            mol.SetProp("alt", str(float(mol.GetProp("vina_score")) - 1.0))
            mol.ClearProp("vina_score")
            writer.write(mol)
    path = manifest(tmp_path, ["vina_score", ""])
    table = pd.read_csv(path)
    table["receptor"] = str(prolif_data() / "vina" / "rec.pdb")
    table.to_csv(path, index=False)
    argv = ["--manifest", str(path), "--score-property", "alt", "--out", str(tmp_path / "s.sdf"), "--device", "cpu"]
    assert score_command.main(argv) == 0  # the shipped model, which needs a docking score on every pose
    scores = read_scores(tmp_path / "s.csv")
    by_complex = scores.groupby("complex_id")["docking_score"].min()
    assert by_complex["c0"] == pytest.approx(-11.8) and by_complex["c1"] == pytest.approx(-12.8)
