"""A docking score is read as written (pecan.runtime.numbers), in `pecan convert` and `pecan score` alike: a
property that is not one number fails that pose (convert, score with the model alone) or stops `pecan score`
under a consensus (exit 2 naming file, pose and property); a Unicode minus is a minus."""

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("rdkit", reason="needs the convert extra: pip install -e '.[convert]'")
pytest.importorskip("prolif", reason="needs the convert extra: pip install -e '.[convert]'")

from rdkit import Chem  # noqa: E402

from pecan.commands import score as score_command  # noqa: E402
from pecan.convert import chemistry as chem  # noqa: E402
from pecan.convert.examples import prolif_data, vina_poses_with_scores  # noqa: E402
from pecan.runtime.errors import DataError  # noqa: E402
from pecan.scoring.consensus import consensus_column  # noqa: E402

VINA = prolif_data() / "vina"


def molecule(score: str):
    mol = Chem.MolFromSmiles("CCO")
    mol.SetProp("score", score)
    return mol


@pytest.mark.parametrize(
    "text, value",
    [("-9.1", -9.1), ("\u221210.6", -10.6), ("\u201310.6", -10.6), (" VINA RESULT:  -9.1  0.000  0.000", -9.1)],
)
def test_docking_score_as_written(text, value):
    assert chem.docking_score(molecule(text), "score") == value


@pytest.mark.parametrize("text", ["failed (code 2)", "nan", "inf", "-9.1 kcal/mol", "score: -7"])
def test_a_docking_score_that_is_not_a_number_fails_naming_file_and_property(text):
    with pytest.raises(chem.ConversionError, match=r"poses\.sdf, SD property 'score': .* is not a number"):
        chem.docking_score(molecule(text), "score", "poses.sdf")


def test_no_property_is_no_score():
    assert np.isnan(chem.docking_score(molecule("-1"), "other"))


def test_consensus_without_a_finite_score_is_a_data_error_naming_the_ligand():
    scores = pd.DataFrame({"complex_id": ["a", "a"], "logit": [0.1, 0.2], "docking_score": [-7.0, np.nan]})
    with pytest.raises(DataError, match="1 of ligand a's 2 poses"):
        consensus_column(scores, 1.0)
    assert len(consensus_column(scores, 0.0)) == 2


def poses_with(tmp_path, pose: int, text: str):
    """ProLIF's Vina poses with their scores, pose ``pose`` (from 0) scored ``text``."""
    mols = list(Chem.SDMolSupplier(str(vina_poses_with_scores(tmp_path / "scored.sdf")), removeHs=False))
    mols[pose].SetProp("vina_score", text)
    path = tmp_path / "poses.sdf"
    with Chem.SDWriter(str(path)) as writer:
        for mol in mols:
            writer.write(mol)
    return path


def score(checkpoint, poses, out, *extra):
    argv = [str(checkpoint), "--receptor", str(VINA / "rec.pdb"), "--poses", str(poses), "--complex-id", "vina"]
    argv += ["--score-property", "vina_score", "--receptor-hydrogens", "keep", "--device", "cpu"]
    return score_command.main([*argv, "--out", str(out), *extra])


@pytest.mark.slow
@pytest.mark.parametrize("text", ["failed (code 2)", "nan"])
def test_pecan_score_refuses_a_score_that_is_not_a_number_under_a_consensus(trained_run, tmp_path, capsys, text):
    poses = poses_with(tmp_path, 1, text)
    assert score(trained_run.checkpoint, poses, tmp_path / "out.sdf", "--docking-weight", "1") == 2
    err = capsys.readouterr().err
    assert "poses.sdf, ligand vina pose 2" in err and "SD property 'vina_score'" in err and repr(text) in err
    assert "Traceback" not in err and not (tmp_path / "out.sdf").exists()
    assert score(trained_run.checkpoint, poses, tmp_path / "alone.sdf") == 0  # the model alone: that pose fails
    failures = pd.read_csv(tmp_path / "alone.failures.csv", dtype=str, keep_default_na=False)
    assert failures["reason"].str.contains("is not a number").sum() == 1


@pytest.mark.slow
def test_pecan_score_reads_a_unicode_minus_as_a_minus(trained_run, tmp_path):
    poses = poses_with(tmp_path, 0, "\u221212.345")
    assert score(trained_run.checkpoint, poses, tmp_path / "out.sdf", "--docking-weight", "1") == 0
    scores = pd.read_csv(tmp_path / "out.csv")
    assert (scores["docking_score"] == -12.345).sum() == 1 and (scores["docking_score"] > 0).sum() == 0


def write_manifest(path, affinity):
    path.write_text(f"complex_id,receptor,poses,affinity\nc1,rec.pdb,poses.sdf,{affinity}\n", encoding="utf-8")
    return path


@pytest.mark.parametrize("text, value", [("7.2", 7.2), (" 7.2 ", 7.2), ("\u22127.2", -7.2)])
def test_a_manifest_affinity_is_read_as_written(tmp_path, text, value):
    from pecan.convert.complexes import read_manifest

    (entry,) = read_manifest(write_manifest(tmp_path / "m.csv", text))
    assert entry.affinity == value


def test_a_blank_manifest_affinity_is_none(tmp_path):
    from pecan.convert.complexes import read_manifest

    (entry,) = read_manifest(write_manifest(tmp_path / "m.csv", ""))
    assert np.isnan(entry.affinity)


@pytest.mark.parametrize("text", ["nan", "inf", "7.2 nM", "n/a"])
def test_a_manifest_affinity_that_is_not_a_number_names_manifest_complex_and_column(tmp_path, text):
    from pecan.convert.complexes import read_manifest
    from pecan.runtime.errors import NotANumber

    with pytest.raises(NotANumber, match=rf"m\.csv, complex c1, affinity: '{text}' is not a number"):
        read_manifest(write_manifest(tmp_path / "m.csv", text))


@pytest.mark.slow
def test_pecan_score_refuses_a_manifest_affinity_that_is_not_a_number(trained_run, tmp_path, capsys):
    poses = vina_poses_with_scores(tmp_path / "scored.sdf")
    manifest = tmp_path / "m.csv"
    manifest.write_text(f"complex_id,receptor,poses,affinity\nvina,{VINA / 'rec.pdb'},{poses},n/a\n")
    argv = [str(trained_run.checkpoint), "--manifest", str(manifest), "--receptor-hydrogens", "keep"]
    assert score_command.main([*argv, "--device", "cpu", "--out", str(tmp_path / "out.sdf")]) == 2
    err = capsys.readouterr().err
    assert "m.csv, complex vina, affinity: 'n/a' is not a number" in err and "Traceback" not in err
    assert not (tmp_path / "out.sdf").exists()


def test_pecan_convert_stops_on_a_manifest_affinity_that_is_not_a_number(tmp_path, capsys):
    from pecan.commands import convert as convert_command

    manifest = write_manifest(tmp_path / "m.csv", "n/a")
    assert convert_command.main([str(manifest), "--out", str(tmp_path / "out")]) == 2
    assert "m.csv, complex c1, affinity: 'n/a' is not a number" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("text, value", [("\u22127.2", -7.2), (" -7.2 ", -7.2), ("\u20137.2", -7.2)])
def test_a_scores_csv_cell_is_read_as_a_docking_score(tmp_path, text, value):
    from pecan.scoring.score_table import ScoreTable

    path = tmp_path / "scores.csv"
    path.write_text(f"record,score\n1,{text}\n", encoding="utf-8")
    assert ScoreTable.read(path, "score").scores[("", 1)] == value


@pytest.mark.parametrize("text", ["1_000", "nan", "Infinity", "-7.2 kcal/mol"])
def test_a_scores_csv_cell_that_is_not_one_number_is_refused(tmp_path, text):
    from pecan.runtime.errors import ConfigError
    from pecan.scoring.score_table import ScoreTable

    path = tmp_path / "scores.csv"
    path.write_text(f"record,score\n1,{text}\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=r"scores\.csv line 2: score .* is not a number"):
        ScoreTable.read(path, "score")
