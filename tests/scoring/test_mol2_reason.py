"""A mol2 molecule RDKit cannot read: the warning gives RDKit's own reason, not only that it failed."""

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
