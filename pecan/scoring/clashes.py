"""Poses that cannot exist: a ligand heavy atom closer to a receptor heavy atom than any real contact.

A model scores whatever graph it is given, and a ligand pushed into the protein (heavy atoms a fraction of an
angstrom from receptor atoms) can score above every real pose. `pecan score` therefore measures each pose's
closest heavy-atom contact with the receptor (``receptor_distance``) and flags a clash (``pecan_clash``) when

- a ligand heavy atom lies within ``CLASH_DISTANCE`` (2.0 A) of a receptor heavy atom, or
- within ``METAL_CLASH_DISTANCE`` (1.5 A) when either atom is a metal ion (the converter's metal feature).

Why these numbers: non-bonded heavy atoms touch at the sum of their van der Waals radii (>= 3.0 A for C, N, O;
the shortest hydrogen bonds, O-O, 2.4-2.5 A), and metal ions coordinate ligand N and O at 1.9-2.3 A, while
1.5 A is already a covalent bond length (C-N 1.47, C-O 1.43 A). Measured on the 659 crystal complexes of the
redocked corpus (receptors as prepared for training): the closest ligand-receptor contact of any crystal
ligand is 2.25 A to a non-metal atom (O-O) and 1.67 A to a metal (Zn-N), so no crystal pose is flagged;
of its 11,518 Vina poses 52 are (0.45%, mostly atoms of hetero groups Vina's receptor model left out).
"""

from __future__ import annotations

import numpy as np

from pecan.data import layout

CLASH_DISTANCE = 2.0
"""A ligand heavy atom closer than this (A) to a receptor heavy atom is a clash."""
METAL_CLASH_DISTANCE = 1.5
"""The same for a pair with a metal ion (metal coordination is shorter than any other non-bonded contact)."""
METAL_COLUMN = layout.FEATURE_COLUMNS.start + 8
"""The atom rows' metal flag (``pecan.convert.chemistry.METAL_SLOT`` among the element features)."""


def receptor_contacts(samples: list) -> tuple[np.ndarray, np.ndarray]:
    """Per sample (``Sample.data``: ligand rows, molcode +1, then the pocket's, -1), the distance from its
    closest ligand heavy atom to a receptor heavy atom (A; inf without receptor rows) and whether it clashes."""
    distances = np.full(len(samples), np.inf)
    clashes = np.zeros(len(samples), dtype=bool)
    for k, sample in enumerate(samples):
        distances[k], clashes[k] = closest_contact(np.asarray(sample.data))
    return distances, clashes


def closest_contact(rows: np.ndarray) -> tuple[float, bool]:
    """(closest ligand-receptor heavy-atom distance, clash) of one pose's atom rows."""
    molcode = rows[:, layout.MOLCODE_COLUMN]
    ligand, receptor = rows[molcode > 0], rows[molcode < 0]
    if len(ligand) == 0 or len(receptor) == 0:
        return float("inf"), False
    xyz_l = ligand[:, layout.COORD_COLUMNS].astype(np.float64)
    xyz_r = receptor[:, layout.COORD_COLUMNS].astype(np.float64)
    # |l|^2 + |r|^2 - 2 l.r in one matrix product: rounding ~1e-12 A^2 at these coordinates, far below any limit
    squared = (xyz_l**2).sum(1)[:, None] + (xyz_r**2).sum(1)[None, :] - 2.0 * (xyz_l @ xyz_r.T)
    closest = float(np.sqrt(max(squared.min(), 0.0)))
    if closest >= CLASH_DISTANCE:  # the larger limit: nothing closer, no clash of either kind
        return closest, False
    metal = (ligand[:, METAL_COLUMN] > 0)[:, None] | (receptor[:, METAL_COLUMN] > 0)[None, :]
    limit = np.where(metal, METAL_CLASH_DISTANCE, CLASH_DISTANCE)
    return closest, bool((squared < limit**2).any())
