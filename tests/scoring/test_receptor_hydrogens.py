"""A receptor without hydrogens (most downloaded PDB files) is detected: Open Babel adds them as the shipped
model's training receptors got theirs, with a note, or a warning says it is scored as given."""

import logging
import os
import shutil
import stat
import sys

import pytest

pytest.importorskip("rdkit", reason="needs the convert extra: pip install -e '.[convert]'")
pytest.importorskip("prolif", reason="needs the convert extra: pip install -e '.[convert]'")

from pecan.convert.examples import prolif_data
from pecan.scoring.receptors import MIN_HYDROGEN_FRACTION, hydrogen_fraction, read_receptor

RECEPTOR = prolif_data() / "vina" / "rec.pdb"


@pytest.fixture
def bare(tmp_path):
    """ProLIF's Vina receptor with its hydrogens removed."""
    path = tmp_path / "bare.pdb"
    lines = RECEPTOR.read_text().splitlines()
    path.write_text("\n".join(line for line in lines if line[76:78].strip() != "H") + "\n")
    return path


@pytest.fixture
def fake_obabel(tmp_path, monkeypatch):
    """An ``obabel`` on PATH that records its arguments and writes the receptor with its hydrogens to -O."""
    folder = tmp_path / "bin"
    folder.mkdir()
    script = folder / "obabel"
    script.write_text(
        f"#!{sys.executable}\nimport shutil, sys\n"
        f"open({str(tmp_path / 'calls')!r}, 'a').write(' '.join(sys.argv[1:]) + '\\n')\n"
        f"shutil.copy({str(RECEPTOR)!r}, sys.argv[sys.argv.index('-O') + 1])\n"
    )
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
    return tmp_path / "calls"


@pytest.fixture
def no_obabel(monkeypatch):
    which = shutil.which
    monkeypatch.setattr(shutil, "which", lambda name, *a, **k: None if name == "obabel" else which(name, *a, **k))


def test_a_receptor_with_hydrogens_is_read_as_given(fake_obabel, caplog):
    with caplog.at_level(logging.INFO, logger="pecan"):
        receptor = read_receptor(RECEPTOR, False, "add")
    assert hydrogen_fraction(receptor.mol) > 0.5 and not fake_obabel.exists() and "hydrogens" not in caplog.text


def test_a_receptor_without_hydrogens_gets_them_from_open_babel_with_a_note(bare, fake_obabel, caplog):
    with caplog.at_level(logging.INFO, logger="pecan"):
        receptor = read_receptor(bare, False, "add")
    assert receptor.path == bare and hydrogen_fraction(receptor.mol) > 0.5
    assert fake_obabel.read_text().split()[:2] == ["-ipdb", str(bare)] and "-h" in fake_obabel.read_text().split()
    assert f"receptor {bare} has no hydrogens (0% of its atoms): added 2545 hydrogens with Open Babel" in caplog.text


def test_without_open_babel_the_receptor_is_scored_as_given_with_a_warning(bare, no_obabel, caplog):
    with caplog.at_level(logging.WARNING, logger="pecan"):
        receptor = read_receptor(bare, False, "add")
    assert hydrogen_fraction(receptor.mol) < MIN_HYDROGEN_FRACTION
    assert f"receptor {bare} has no hydrogens" in caplog.text and "apt-get install openbabel" in caplog.text


def test_keep_scores_it_as_given_with_a_warning(bare, fake_obabel, caplog):
    with caplog.at_level(logging.WARNING, logger="pecan"):
        receptor = read_receptor(bare, False, "keep")
    assert hydrogen_fraction(receptor.mol) == 0 and not fake_obabel.exists()
    assert "scored as given (--receptor-hydrogens keep)" in caplog.text


def test_a_receptor_open_babel_cannot_read_is_scored_as_given_with_a_warning(tmp_path, bare, monkeypatch, caplog):
    folder = tmp_path / "failing"
    folder.mkdir()
    (folder / "obabel").write_text("#!/bin/sh\necho 'cannot read input' >&2\nexit 1\n")
    (folder / "obabel").chmod(0o755)
    monkeypatch.setenv("PATH", f"{folder}{os.pathsep}{os.environ['PATH']}")
    with caplog.at_level(logging.WARNING, logger="pecan"):
        receptor = read_receptor(bare, False, "add")
    assert hydrogen_fraction(receptor.mol) == 0 and "cannot read input" in caplog.text


@pytest.mark.skipif(shutil.which("obabel") is None, reason="needs Open Babel's obabel")
def test_open_babel_protonates_a_bare_receptor(bare):
    assert hydrogen_fraction(read_receptor(bare, False, "add").mol) > 0.4


@pytest.mark.slow
def test_scores_with_added_hydrogens_are_those_of_the_protonated_receptor(bare, fake_obabel, tmp_path):
    from pecan.commands import score as score_command
    from pecan.convert.examples import vina_poses_with_scores
    from pecan.scoring.scores_csv import read_scores

    poses = vina_poses_with_scores(tmp_path / "vina.sdf")

    def scored(receptor, name, *extra):
        argv = ["--receptor", str(receptor), "--poses", str(poses), "--out", str(tmp_path / f"{name}.sdf")]
        argv += ["--score-property", "vina_score", "--device", "cpu", "--progress", "off", *extra]
        assert score_command.main(argv) == 0  # the shipped model
        return read_scores(tmp_path / f"{name}.csv").set_index("pose_id")["pecan_score"]

    given, added = scored(RECEPTOR, "given"), scored(bare, "added")
    kept = scored(bare, "kept", "--receptor-hydrogens", "keep")
    assert added.to_numpy() == pytest.approx(given.loc[added.index].to_numpy(), abs=1e-6)
    assert (kept - given.loc[kept.index]).abs().max() > 0.01  # hydrogens matter to the model
