"""Crystal ligands that cannot place a docking box fail with a reason in PECAN's words (no docking program
needed: they fail before Vina is started)."""

import json

import pandas as pd
import pytest

pytest.importorskip("rdkit")

from rdkit import Chem  # noqa: E402
from rdkit.Chem import AllChem  # noqa: E402

from pecan.redock.dock import DockOptions  # noqa: E402
from pecan.redock.run import redock  # noqa: E402


def _write(mol, path):
    Chem.MolToMolFile(mol, str(path))
    return path


def test_a_crystal_ligand_without_heavy_atoms_or_with_an_ion_is_a_failure_with_a_reason(tmp_path):
    hydrogen = Chem.AddHs(Chem.MolFromSmiles("[H][H]"))
    hydrogen.AddConformer(Chem.Conformer(hydrogen.GetNumAtoms()))
    salt = Chem.AddHs(Chem.MolFromSmiles("CC(=O)[O-].[Na+]"))
    AllChem.EmbedMolecule(salt, randomSeed=1)
    (tmp_path / "rec.pdb").write_text(
        "ATOM      1  CA  GLY A   1       0.000   0.000   0.000  1.00  0.00           C\n"
    )
    rows = [
        {"complex_id": "hydrogen", "receptor": "rec.pdb", "crystal_ligand": _write(hydrogen, tmp_path / "h.sdf").name},
        {"complex_id": "salt", "receptor": "rec.pdb", "crystal_ligand": _write(salt, tmp_path / "salt.sdf").name},
    ]
    pd.DataFrame(rows).to_csv(tmp_path / "m.csv", index=False)
    summary = redock(tmp_path / "m.csv", tmp_path / "out", DockOptions(), progress=False)
    reasons = dict(pd.read_csv(tmp_path / "out" / "failures.csv").itertuples(index=False))
    assert summary["failed"] == 2
    assert "h.sdf: no heavy atoms" in reasons["hydrogen"] and "zero-size" not in reasons["hydrogen"]
    assert "salt.sdf: 2 disconnected molecules in one record (C2H3O2, Na)" in reasons["salt"], reasons["salt"]
    assert json.loads((tmp_path / "out" / "records" / "salt.json").read_text())["status"] == "failed"
