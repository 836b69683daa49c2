"""Chemists' files as they come: a mol2 molecule RDKit cannot read warns with RDKit's own reason; an Open Babel
conversion of Vina PDBQT poses is flagged (its bond orders are a guess)."""

import logging

import pytest

pytest.importorskip("rdkit", reason="needs the convert extra: pip install -e '.[convert]'")

from pecan.scoring.inputs import iter_records

ATOMS = "".join(
    f"      {k} C{k}          {1.4 * (k - 1):.4f}    0.0000    0.0000 C.ar    1  LIG1        0.0000\n"
    for k in (1, 2, 3)
)
# Three aromatic-typed carbons in a chain, as a careless mol2 writer types them: not a ring, so not aromatic.
AROMATIC_CHAIN = (
    "@<TRIPOS>MOLECULE\nchain\n 3 2 0 0 0\nSMALL\nNO_CHARGES\n\n@<TRIPOS>ATOM\n"
    + ATOMS
    + "@<TRIPOS>BOND\n     1     1     2   ar\n     2     2     3   ar\n"
)
ETHANE = (
    "@<TRIPOS>MOLECULE\nethane\n 2 1 0 0 0\nSMALL\nNO_CHARGES\n\n@<TRIPOS>ATOM\n"
    "      1 C1          0.0000    0.0000    0.0000 C.3     1  LIG1        0.0000\n"
    "      2 C2          1.5400    0.0000    0.0000 C.3     1  LIG1        0.0000\n"
    "@<TRIPOS>BOND\n     1     1     2    1\n"
)


def test_an_unreadable_mol2_molecule_is_a_record_without_a_molecule_and_rdkits_reason_is_logged(tmp_path, caplog):
    path = tmp_path / "poses.mol2"
    path.write_text(ETHANE + AROMATIC_CHAIN)
    with caplog.at_level(logging.WARNING, logger="pecan"):
        records = list(iter_records(path))
    assert [r.title for r in records] == ["ethane", "chain"]
    assert records[0].mol.GetNumAtoms() == 2 and records[1].mol is None
    assert f"poses {path}, mol2 molecule 2: RDKit cannot read it" in caplog.text
    assert "non-ring atom 0 marked aromatic" in caplog.text


OPEN_BABEL_FROM_PDBQT = (
    "vina_out\n OpenBabel12082603223D\n\n  2  1  0  0  0  0  0  0  0  0999 V2000\n"
    "    0.0000    0.0000    0.0000 C   0  0  0  0  0  0  0  0  0  0  0  0\n"
    "    1.5400    0.0000    0.0000 C   0  0  0  0  0  0  0  0  0  0  0  0\n"
    "  1  2  1  0  0  0  0\nM  END\n>  <MODEL>\n1\n\n>  <REMARK>\n VINA RESULT:    -7.1      0.000      0.000\n\n$$$$\n"
)


def test_an_open_babel_conversion_of_a_pdbqt_is_flagged_once(tmp_path, caplog):
    path = tmp_path / "converted.sdf"
    path.write_text(OPEN_BABEL_FROM_PDBQT * 3)
    with caplog.at_level(logging.WARNING, logger="pecan"):
        assert len(list(iter_records(path))) == 3
    assert caplog.text.count("converted from Vina PDBQT by Open Babel") == 1
    caplog.clear()
    path.write_text(OPEN_BABEL_FROM_PDBQT.replace("VINA RESULT", "a note"))
    with caplog.at_level(logging.WARNING, logger="pecan"):
        list(iter_records(path))
    assert "converted from Vina PDBQT" not in caplog.text


def test_poses_without_docking_scores_are_refused_before_the_model_loads_naming_docking_weight_0(tmp_path):
    from pecan.commands import score as score_command
    from pecan.runtime.errors import ConfigError
    from pecan.scoring.memory import StageClock
    from pecan.scoring.poses import score_job

    (tmp_path / "rec.pdb").write_text(
        "ATOM      1  CA  ALA A   1       0.000   0.000   0.000  1.00  0.00           C\nEND\n"
    )
    (tmp_path / "diffdock.sdf").write_text(ETHANE_SDF)
    argv = ["--receptor", str(tmp_path / "rec.pdb"), "--poses", str(tmp_path / "diffdock.sdf")]
    request = score_command.request(score_command.parse_args([*argv, "--out", str(tmp_path / "o.sdf")]))
    assert request.docking_weight > 0  # the shipped model ranks by its consensus with the docking score
    with pytest.raises(ConfigError, match=r"diffdock\.sdf has no SD property 'docking_score'.*--docking-weight 0"):
        score_job(request, StageClock())
    alone = score_command.request(
        score_command.parse_args([*argv, "--docking-weight", "0", "--out", str(tmp_path / "o.sdf")])
    )
    assert score_job(alone, StageClock()) is not None


ETHANE_SDF = (
    "ethane\n     RDKit          3D\n\n  2  1  0  0  0  0  0  0  0  0999 V2000\n"
    "    0.0000    0.0000    0.0000 C   0  0  0  0  0  0  0  0  0  0  0  0\n"
    "    1.5400    0.0000    0.0000 C   0  0  0  0  0  0  0  0  0  0  0  0\n"
    "  1  2  1  0\nM  END\n$$$$\n"
)
