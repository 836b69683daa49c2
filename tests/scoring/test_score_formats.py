"""`pecan score` with the shipped model on each poses format: an SDF with its docking scores, mol2 poses with
their scores from a CSV (``--scores-csv``), Vina's own PDBQT output (scores from ``REMARK VINA RESULT``); the
same poses get the same scores whichever way they came. Real subprocesses (``python -m pecan score``), so the
lines printed are the ones a user sees."""

import subprocess
import sys

import pandas as pd
import pytest

pytest.importorskip("rdkit", reason="needs the convert extra: pip install -e '.[convert]'")
pytest.importorskip("prolif", reason="needs the convert extra: pip install -e '.[convert]'")

from rdkit import Chem

from pecan.convert.examples import prolif_data, vina_poses_with_scores
from tests.procs import clean_env

VINA = prolif_data() / "vina"


def score(tmp_path, poses, out, *extra):
    """``python -m pecan score`` on ProLIF's Vina receptor with the shipped model: (exit code, stderr)."""
    argv = ["--receptor", str(VINA / "rec.pdb"), "--poses", str(poses), "--out", str(tmp_path / out), *extra]
    done = subprocess.run(
        [sys.executable, "-m", "pecan", "score", *argv, "--device", "cpu", "--progress", "off"],
        cwd=tmp_path,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    return done.returncode, done.stderr


def by_vina_score(path):
    """The scores CSV's pecan_score by docking score (the same 9 poses, named differently per format)."""
    table = pd.read_csv(path)
    return table.set_index("docking_score")["pecan_score"].sort_index()


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """The 9 poses as an SDF with their Vina scores (``vina_score``), scored: the reference scores."""
    tmp = tmp_path_factory.mktemp("formats")
    sdf = vina_poses_with_scores(tmp / "vina.sdf")
    code, stderr = score(tmp, sdf, "sdf_scored.sdf", "--score-property", "vina_score")
    assert code == 0, stderr[-3000:]
    return tmp, sdf, stderr


@pytest.mark.slow
def test_third_party_lines_are_not_labelled_pecan(reference):
    stderr = reference[2]
    assert "netCDF4" not in stderr and "DeprecationWarning" not in stderr
    assert "[pecan] INFO scoring with the shipped model" in stderr


@pytest.mark.slow
def test_mol2_poses_take_their_scores_from_a_csv_and_are_written_as_sdf(reference):
    tmp, sdf = reference[0], reference[1]
    vina_scores = [m.GetProp("vina_score") for m in Chem.SDMolSupplier(str(sdf))]
    rows = "".join(f"{k},{value}\n" for k, value in enumerate(vina_scores, start=1))
    (tmp / "scores.csv").write_text("record,vina\n" + rows)
    extra = ("--scores-csv", str(tmp / "scores.csv"), "--score-column", "vina")
    code, stderr = score(tmp, VINA / "vina_output.mol2", "mol2_scored.sdf", *extra)
    assert code == 0, stderr[-3000:]
    mols = list(Chem.SDMolSupplier(str(tmp / "mol2_scored.sdf")))
    assert len(mols) == 9 and [m.GetIntProp("pecan_rank") for m in mols] == list(range(1, 10))
    pd.testing.assert_series_equal(by_vina_score(tmp / "mol2_scored.csv"), by_vina_score(tmp / "sdf_scored.csv"))


@pytest.mark.slow
def test_a_pose_without_a_row_in_the_scores_csv_exits_2_naming_it(reference):
    tmp = reference[0]
    (tmp / "some.csv").write_text("record,docking_score\n1,-11.8\n2,-11.4\n")
    code, stderr = score(tmp, VINA / "vina_output.mol2", "some_scored.sdf", "--scores-csv", str(tmp / "some.csv"))
    assert code == 2 and "has no record 3" in stderr and "vina_output.mol2" in stderr
    assert not (tmp / "some_scored.sdf").exists() and not (tmp / "some_scored.metrics.json").exists()


@pytest.mark.slow
def test_vina_pdbqt_poses_are_scored_with_their_vina_scores(reference):
    pytest.importorskip("meeko", reason="PDBQT poses need Meeko (the dock extra)")
    from meeko import MoleculePreparation, PDBQTWriterLegacy

    tmp, sdf = reference[0], reference[1]
    models = []
    for k, mol in enumerate(Chem.SDMolSupplier(str(sdf), removeHs=False), start=1):
        text, ok, message = PDBQTWriterLegacy.write_string(MoleculePreparation().prepare(mol)[0])
        assert ok, message
        vina = f"REMARK VINA RESULT:    {mol.GetProp('vina_score')}      0.000      0.000\n"
        models.append(f"MODEL {k}\n{vina}{text}ENDMDL\n")  # as Vina writes its output of Meeko's ligand
    (tmp / "docked.pdbqt").write_text("".join(models))
    code, stderr = score(tmp, tmp / "docked.pdbqt", "pdbqt_scored.sdf")
    assert code == 0, stderr[-3000:]
    expected = by_vina_score(tmp / "sdf_scored.csv")
    pd.testing.assert_series_equal(by_vina_score(tmp / "pdbqt_scored.csv"), expected, atol=1e-6, rtol=0)
    mols = list(Chem.SDMolSupplier(str(tmp / "pdbqt_scored.sdf")))
    assert sorted(float(m.GetProp("docking_score")) for m in mols) == sorted(expected.index)


@pytest.mark.slow
def test_no_pose_scored_points_to_no_failures_file(reference):
    tmp = reference[0]
    (tmp / "broken.sdf").write_text(
        "ligX\n  broken\n\n  2  1  0  0  0  0  0  0  0  0999 V2000\nnonsense\nM  END\n$$$$\n"
    )
    code, stderr = score(tmp, tmp / "broken.sdf", "broken_scored.sdf", "--score-property", "vina_score")
    assert code == 1 and "no pose could be scored: 1 failure(s), the first: ligand broken" in stderr
    assert "nothing was written" in stderr and "failures.csv" not in stderr
    assert not (tmp / "broken_scored.failures.csv").exists()
