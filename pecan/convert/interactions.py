"""The five pose-level interaction counts, from ProLIF's interaction fingerprint.

ProLIF interaction type -> shard attribute (each detected ligand-protein atom-group contact counts once):

| attribute | ProLIF interactions |
|---|---|
| num_hbonds | HBDonor, HBAcceptor |
| hpbond | Hydrophobic |
| habond | XBDonor, XBAcceptor (halogen bonds) |
| sbond | Cationic, Anionic (salt bridges) |
| pbond | PiStacking (face-to-face and edge-to-face) |

ProLIF finds hydrogen bonds through explicit hydrogens: a receptor or pose without hydrogens gets
``num_hbonds`` 0 (add hydrogens before docking, as docking programs require anyway).
"""

from __future__ import annotations

import re
import warnings
from collections import Counter

from pecan.data import layout
from pecan.runtime.errors import ConversionError

INTERACTION_MAP = {
    "num_hbonds": ("HBDonor", "HBAcceptor"),
    "hpbond": ("Hydrophobic",),
    "habond": ("XBDonor", "XBAcceptor"),
    "sbond": ("Cationic", "Anionic"),
    "pbond": ("PiStacking",),
}
assert tuple(INTERACTION_MAP) == layout.INTERACTION_ATTRS


def _prolif():
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import prolif
    except ImportError as err:
        raise ImportError("interaction counts need ProLIF: pip install -e '.[convert]'") from err
    return prolif


def prolif_molecule(mol, what: str):
    """``prolif.Molecule`` of ``mol`` (``what``: "the receptor pocket" or "this pose", for the error).

    ProLIF names a residue by name, number and chain, without the PDB insertion code, and refuses a name that
    covers two disconnected pieces: residues that differ only in their insertion code (two ions 950A and 950B)
    get the code added to their chain here, so each stays a residue of its own. A residue still in pieces
    (atoms of one residue too far apart to be bonded) is a ConversionError naming it."""
    plf = _prolif()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return plf.Molecule.from_rdkit(_insertion_codes_in_chain(mol))
    except RuntimeError as err:
        if type(err).__name__ != "FragmentedResidueError":
            raise
        named = re.search(r"residue identifier: (.+?)\. This", str(err))
        residues = f"residue(s) {named.group(1)}" if named else "a residue"
        raise ConversionError(
            f"{what}: {residues} in disconnected pieces (atoms of one residue too far apart to be bonded); "
            "interactions are counted per residue: repair or remove it in the structure file"
        ) from None


def _insertion_codes_in_chain(mol):
    coded = [a for a in mol.GetAtoms() if a.GetPDBResidueInfo() and a.GetPDBResidueInfo().GetInsertionCode().strip()]
    if not coded:
        return mol
    from rdkit import Chem

    mol = Chem.Mol(mol)
    for atom in mol.GetAtoms():
        info = atom.GetPDBResidueInfo()
        if info is not None and info.GetInsertionCode().strip():
            info.SetChainId(info.GetChainId() + info.GetInsertionCode().strip())
    return mol


class InteractionCounter:
    """Counts interactions of many poses against one receptor (the receptor is prepared once)."""

    def __init__(self, receptor) -> None:
        plf = _prolif()
        self.plf = plf
        self.protein = prolif_molecule(receptor, "the receptor pocket")
        names = [name for names in INTERACTION_MAP.values() for name in names]
        self.fingerprint = plf.Fingerprint(names, count=True)

    def counts(self, pose) -> dict[str, float]:
        """{attribute: count} for one pose (an RDKit molecule with hydrogens and 3-D coordinates)."""
        ligand = prolif_molecule(pose, "this pose")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            found = self.fingerprint.generate(ligand, self.protein, metadata=True)
        per_type: Counter = Counter()
        for interactions in found.values():
            for name, hits in interactions.items():
                per_type[name] += len(hits)
        return {attr: float(sum(per_type[name] for name in names)) for attr, names in INTERACTION_MAP.items()}

    def counts_many(self, poses, signatures=None) -> list[dict[str, float]]:
        """``counts`` of each pose (``signatures`` is accepted for ``ContactCounter``'s interface, unused)."""
        return [self.counts(pose) for pose in poses]
