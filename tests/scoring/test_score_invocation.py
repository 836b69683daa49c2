"""Invocation mistakes of `pecan score` (and a missing config of `pecan predict`/`pecan train`) exit 2 with
the real cause, before the model loads and before torch is imported (checked with ``-X importtime``), and
leave earlier outputs as they were. Real subprocesses: ``python -X importtime -m pecan ...``."""

import subprocess
import sys

import pytest

from tests.procs import ROOT, clean_env

LIGAND_PDB = "HETATM    1  C1  LIG A   1       0.000   0.000   0.000  1.00  0.00           C\nEND\n"


def protein_pdb(residues: int) -> str:
    """A PDB of ``residues`` alanines (one CA each): a receptor's file."""
    return "".join(
        f"ATOM  {k:5d}  CA  ALA A{k:4d}    {k * 3.8:8.3f}   0.000   0.000  1.00  0.00           C\n"
        for k in range(1, residues + 1)
    )


@pytest.fixture
def files(tmp_path):
    """A receptor PDB, an SDF of poses (never read: every case stops before), a receptor PDBQT."""
    (tmp_path / "rec.pdb").write_text(protein_pdb(40))
    (tmp_path / "rec.pdbqt").write_text(protein_pdb(40))
    (tmp_path / "poses.sdf").write_text("lig\n\n\n  0  0  0  0  0  0  0  0  0  0999 V2000\nM  END\n$$$$\n")
    (tmp_path / "lig.pdb").write_text(LIGAND_PDB)
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "rec.pdb").write_text(protein_pdb(40))
    return tmp_path


def pecan(tmp_path, *argv):
    """``python -X importtime -m pecan ARGV`` in ``tmp_path``: (exit code, stderr without the import lines,
    whether torch was imported)."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "pecan", *argv],
        cwd=tmp_path,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    lines = done.stderr.splitlines()
    imported = [line.rsplit("|", 1)[-1].strip() for line in lines if line.startswith("import time:")]
    message = "\n".join(line for line in lines if not line.startswith("import time:"))
    return done.returncode, message, "torch" in imported


def score(tmp_path, *argv):
    return pecan(tmp_path, "score", *argv)


CASES = {
    "receptor typo": (["--receptor", "recx.pdb", "--poses", "poses.sdf", "--out", "o.sdf"], "recx.pdb: file not found"),
    "poses typo": (["--receptor", "rec.pdb", "--poses", "posesx.sdf", "--out", "o.sdf"], "posesx.sdf: file or"),
    "receptor PDB as poses": (["--receptor", "rec.pdb", "--poses", "rec.pdb", "--out", "o.sdf"], "is the receptor"),
    "a copy of the receptor as poses": (
        ["--receptor", "lig.pdb", "--poses", "rec.pdb", "--out", "o.sdf"],
        "holds a protein (40 amino-acid residues)",
    ),
    "receptor PDBQT as poses": (["--receptor", "rec.pdb", "--poses", "rec.pdbqt", "--out", "o.sdf"], "a receptor"),
    "a PDBQT receptor": (
        ["--receptor", "rec.pdbqt", "--poses", "poses.sdf", "--out", "o.sdf"],
        "obabel -ipdbqt rec.pdbqt -opdb -h -O rec.pdb",
    ),
    "poses as receptor": (["--receptor", "poses.sdf", "--poses", "lig.pdb", "--out", "o.sdf"], "a ligand format"),
    "unknown poses format": (["--receptor", "rec.pdb", "--poses", "rec.txt", "--out", "o.sdf"], "not found"),
    "missing checkpoint": (["nope.pt", "--receptor", "rec.pdb", "--poses", "poses.sdf", "--out", "o.sdf"], "nope.pt"),
    "batch size 0": (
        ["--receptor", "rec.pdb", "--poses", "poses.sdf", "--batch-size", "0", "--out", "o.sdf"],
        "at least 1",
    ),
    "a poses directory without poses": (
        ["--receptor", "rec.pdb", "--poses", "empty", "--out", "o.sdf"],
        "without .sdf",
    ),
    "--out a directory": (["--receptor", "rec.pdb", "--poses", "poses.sdf", "--out", "."], ". is a directory"),
    "--out in /proc": (
        ["--receptor", "rec.pdb", "--poses", "poses.sdf", "--out", "/proc/o.sdf"],
        "/proc does not accept",
    ),
    "--out under a file": (["--receptor", "rec.pdb", "--poses", "poses.sdf", "--out", "lig.pdb/o.sdf"], "is a file"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_invocation_mistakes_exit_2_before_torch(files, case):
    argv, message = CASES[case]
    code, stderr, torch_imported = score(files, *argv)
    assert code == 2, stderr[-2000:]
    assert message in stderr and "Traceback" not in stderr
    assert not torch_imported


def test_a_pdbqt_without_smiles_remarks_is_refused_with_what_to_do(files):
    (files / "vina_out.pdbqt").write_text("MODEL 1\nREMARK VINA RESULT:    -7.1  0.0  0.0\nROOT\n" + LIGAND_PDB)
    code, stderr, torch_imported = score(files, "--receptor", "rec.pdb", "--poses", "vina_out.pdbqt", "--out", "o.sdf")
    assert code == 2 and "no 'REMARK SMILES' lines" in stderr and not torch_imported


def test_an_output_that_is_a_directory_leaves_the_earlier_outputs(files):
    earlier = {name: f"earlier {name}" for name in ("o.sdf", "o.csv", "o.failures.csv")}
    for name, text in earlier.items():
        (files / name).write_text(text)
    (files / "o.metrics.json").mkdir()
    code, stderr, _ = score(files, "--receptor", "rec.pdb", "--poses", "poses.sdf", "--out", "o.sdf")
    assert code == 2 and "the metrics JSON o.metrics.json is a directory" in stderr
    assert {name: (files / name).read_text() for name in earlier} == earlier


def test_scores_csv_mistakes_exit_2_before_torch(files):
    (files / "scores.csv").write_text("title,vina\nlig,-7.0\n")
    base = ["--receptor", "rec.pdb", "--poses", "poses.sdf", "--out", "o.sdf", "--scores-csv", "scores.csv"]
    code, stderr, torch_imported = score(files, *base)
    assert code == 2 and "needs the score column 'docking_score'" in stderr and not torch_imported
    (files / "scores.csv").write_text("title,vina\nlig,strong\n")
    code, stderr, torch_imported = score(files, *base, "--score-column", "vina")
    assert code == 2 and "line 2: vina 'strong' is not a number" in stderr and not torch_imported


def test_the_scores_csv_is_never_overwritten(files):
    (files / "o.csv").write_text("title,docking_score\nlig,-7.0\n")
    code, stderr, _ = score(
        files, "--receptor", "rec.pdb", "--poses", "poses.sdf", "--out", "o.sdf", "--scores-csv", "o.csv"
    )
    assert code == 2 and "is --scores-csv" in stderr
    assert (files / "o.csv").read_text() == "title,docking_score\nlig,-7.0\n"


@pytest.mark.parametrize("command", ["predict", "train"])
def test_a_missing_config_exits_2_before_torch(tmp_path, command):
    shipped = str(ROOT / "pecan/pretrained/corpus_student.pt")
    argv = ["predict", shipped, "--config"] if command == "predict" else ["train"]
    code, stderr, torch_imported = pecan(tmp_path, *argv, "nope.yaml")
    assert code == 2 and "cannot read config file nope.yaml" in stderr
    assert not torch_imported


def test_a_manifest_row_with_a_pdbqt_receptor_exits_2_naming_the_row_and_the_conversion(files):
    (files / "m.csv").write_text("complex_id,receptor,poses\nc1,rec.pdbqt,poses.sdf\n")
    code, stderr, _ = score(files, "--manifest", "m.csv", "--out", "o.sdf", "--device", "cpu")
    assert code == 2, stderr[-2000:]
    assert "--manifest m.csv, complex c1: receptor" in stderr and "obabel -ipdbqt" in stderr
    assert "Traceback" not in stderr and not (files / "o.sdf").exists()
