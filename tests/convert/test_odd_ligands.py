"""Odd ligand and receptor records get a reason in PECAN's words, never a third-party library's internals:
a record holding a ligand and a disconnected ion, a record without atoms, receptor residues that differ only
in their insertion code, and a receptor residue in disconnected pieces."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

pytest.importorskip("rdkit", reason="needs the convert extra: pip install -e '.[convert]'")
pytest.importorskip("prolif", reason="needs the convert extra: pip install -e '.[convert]'")

from rdkit import Chem  # noqa: E402

from pecan.convert.complexes import Options  # noqa: E402
from pecan.convert.run import convert  # noqa: E402
from tests.convert import structures as st  # noqa: E402

LIGAND = "NCC(O)CCS"
EMPTY_RECORD = "\n  RDKit          3D\n\n  0  0  0  0  0  0  0  0  0  0999 V2000\nM  END\n$$$$\n"


def _with_ion(mol: Chem.Mol) -> Chem.Mol:
    """``mol`` and a sodium ion 3 A from its first atom, in one record."""
    editable = Chem.RWMol(mol)
    ion = editable.AddAtom(Chem.Atom(11))
    editable.GetAtomWithIdx(ion).SetFormalCharge(1)
    first = editable.GetConformer().GetAtomPosition(0)
    editable.GetConformer().SetAtomPosition(ion, (first.x + 3.0, first.y, first.z))
    out = editable.GetMol()
    Chem.SanitizeMol(out)
    return out


def _sodium(serial: int, insertion_code: str, xyz) -> str:
    """A sodium ion HETATM record of residue NA 950 in chain B, with ``insertion_code`` (a space: none)."""
    return (
        f"HETATM{serial:5d} NA    NA B 950{insertion_code}   {xyz[0]:8.3f}{xyz[1]:8.3f}{xyz[2]:8.3f}  1.00  0.00"
        "          NA"
    )


def _failures(tmp_path: Path, rows: list[dict]) -> dict:
    convert(st.manifest(tmp_path / "m.csv", rows), tmp_path / "out", Options(), progress=False)
    failures = pd.read_csv(tmp_path / "out" / "failures.csv", keep_default_na=False)
    return {(r.complex_id, r.pose_id): r.reason for r in failures.itertuples()}


def test_a_record_with_a_disconnected_ion_or_without_atoms_is_a_reason_not_a_library_error(tmp_path):
    crystal = st.ligand(LIGAND)
    st.write_receptor(tmp_path / "rec.pdb", crystal.GetConformer().GetPositions())
    st.write_sdf(tmp_path / "xtal.sdf", [crystal])
    st.write_sdf(tmp_path / "ion.sdf", [crystal, _with_ion(crystal)], names=["good", "with_ion"])
    (tmp_path / "empty.sdf").write_text(EMPTY_RECORD)
    rows = [
        {"complex_id": "ion", "receptor": "rec.pdb", "crystal_ligand": "xtal.sdf", "poses": "ion.sdf"},
        {"complex_id": "unlabelled", "receptor": "rec.pdb", "poses": "ion.sdf"},  # no crystal: ProLIF's turn
        {"complex_id": "empty", "receptor": "rec.pdb", "crystal_ligand": "xtal.sdf", "poses": "empty.sdf"},
        {"complex_id": "empty_alone", "receptor": "rec.pdb", "poses": "empty.sdf"},  # no crystal either
        {"complex_id": "ion_crystal", "receptor": "rec.pdb", "crystal_ligand": "ion.sdf", "poses": "xtal.sdf"},
    ]
    rows[-1]["crystal_ligand"] = str(st.write_sdf(tmp_path / "ion_xtal.sdf", [_with_ion(crystal)]))
    reasons = _failures(tmp_path, rows)
    for complex_id in ("ion", "unlabelled"):
        reason = reasons[(complex_id, "with_ion")]
        assert "2 disconnected molecules in one record (C4NOS, Na)" in reason and "ion.sdf" in reason, reason
        assert "one molecule per record" in reason
    for complex_id in ("empty", "empty_alone"):
        assert "no heavy atoms (0 atoms in all)" in reasons[(complex_id, f"{complex_id}_pose1")]
    assert "within" not in " ".join(reasons.values())  # not "no receptor atoms within 8 A"
    assert "crystal ligand" in reasons[("ion_crystal", "")] and "disconnected" in reasons[("ion_crystal", "")]
    assert not any("Fragmented" in r or "unexpected" in r for r in reasons.values()), reasons


def _receptor_with_sodiums(tmp_path: Path, crystal, insertion_codes: tuple[str, str]) -> None:
    centre = crystal.GetConformer().GetPositions().mean(0)
    receptor = st.write_receptor(tmp_path / "rec.pdb", crystal.GetConformer().GetPositions())
    text = receptor.read_text().replace("END\n", "")
    text += _sodium(9101, insertion_codes[0], centre + np.array([0.0, -4.0, 0.0])) + "\n"
    text += _sodium(9102, insertion_codes[1], centre + np.array([0.0, 4.5, 1.0])) + "\nEND\n"
    receptor.write_text(text)


def test_single_atom_residues_that_differ_in_insertion_code_are_two_residues(tmp_path):
    crystal = st.ligand(LIGAND)
    _receptor_with_sodiums(tmp_path, crystal, ("A", "B"))
    st.write_sdf(tmp_path / "xtal.sdf", [crystal])
    row = {"complex_id": "icode", "receptor": "rec.pdb", "crystal_ligand": "xtal.sdf", "poses": "xtal.sdf"}
    assert _failures(tmp_path, [row]) == {}


def test_a_receptor_residue_in_disconnected_pieces_is_named(tmp_path):
    crystal = st.ligand(LIGAND)
    _receptor_with_sodiums(tmp_path, crystal, (" ", " "))  # one residue id, two atoms 8.5 A apart
    st.write_sdf(tmp_path / "xtal.sdf", [crystal])
    row = {"complex_id": "split", "receptor": "rec.pdb", "crystal_ligand": "xtal.sdf", "poses": "xtal.sdf"}
    reason = _failures(tmp_path, [row])[("split", "")]
    assert reason.startswith("the receptor pocket: residue(s) NA950.B in disconnected pieces"), reason
    assert "vdW" not in reason and "prolif" not in reason.lower()


@pytest.mark.parametrize("only_odd", [False, True])
def test_screening_gives_the_same_reasons(tmp_path, only_odd):
    """`pecan score`'s featuriser names the same reasons per record as the converter."""
    from pecan.convert.complexes import ComplexEntry, convert_complex
    from pecan.scoring.featurise import GroupConverter, LigandGroup

    crystal = st.ligand(LIGAND)
    receptor = st.write_receptor(tmp_path / "rec.pdb", crystal.GetConformer().GetPositions())
    records = ([] if only_odd else [crystal]) + [_with_ion(crystal), Chem.MolFromMolBlock(EMPTY_RECORD, removeHs=False)]
    poses = tmp_path / "poses.sdf"
    reference = convert_complex(ComplexEntry("odd", receptor, poses, None), Options(), records=records)
    screened = GroupConverter(Options()).convert(LigandGroup("odd", receptor, str(poses), records, None, None))
    assert screened.failures == reference.failures and len(screened.poses) == len(reference.poses)
    reasons = [f["reason"] for f in screened.failures]
    assert any("2 disconnected molecules in one record" in r for r in reasons), reasons
    assert any("no heavy atoms" in r for r in reasons) and not any("within" in r for r in reasons), reasons
