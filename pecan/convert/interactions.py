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

import warnings
from collections import Counter

from pecan.data import layout

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


class InteractionCounter:
    """Counts interactions of many poses against one receptor (the receptor is prepared once)."""

    def __init__(self, receptor) -> None:
        plf = _prolif()
        self.plf = plf
        self.protein = plf.Molecule.from_rdkit(receptor)
        names = [name for names in INTERACTION_MAP.values() for name in names]
        self.fingerprint = plf.Fingerprint(names, count=True)

    def counts(self, pose) -> dict[str, float]:
        """{attribute: count} for one pose (an RDKit molecule with hydrogens and 3-D coordinates)."""
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ligand = self.plf.Molecule.from_rdkit(pose)
            found = self.fingerprint.generate(ligand, self.protein, metadata=True)
        per_type: Counter = Counter()
        for interactions in found.values():
            for name, hits in interactions.items():
                per_type[name] += len(hits)
        return {attr: float(sum(per_type[name] for name in names)) for attr, names in INTERACTION_MAP.items()}

    def counts_many(self, poses, signatures=None) -> list[dict[str, float]]:
        """``counts`` of each pose (``signatures`` is accepted for ``ContactCounter``'s interface, unused)."""
        return [self.counts(pose) for pose in poses]
