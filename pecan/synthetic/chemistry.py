"""Atom roles, per-atom chemistry tables and geometry helpers of the synthetic generator."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pecan.data import layout

DOCKING_GROUP = layout.DEFAULT_POSE_GROUP
CRYSTAL_GROUP = layout.DEFAULT_CRYSTAL_GROUP
CRYSTAL_POSE_ID = CRYSTAL_GROUP.rpartition("/")[2]  # crystal rows use the group's own name
INTERACTION_NAMES = layout.INTERACTION_ATTRS
INTERACTION_CUTOFFS = np.array([3.5, 4.5, 3.5, 4.0, 5.5])  # A, same order
INDEX_COLUMNS = layout.INDEX_CSV_COLUMNS  # the header of the index CSV it writes
N_COLUMNS = layout.N_COLUMNS
MOLCODE_COLUMN = layout.MOLCODE_COLUMN

# One-hot element slots of columns 3-11.
B, C, N, O, P, S, SE, HALOGEN, METAL = range(9)  # noqa: E741 - element symbols

BOND_LENGTH = 1.5
RING_BOND_LENGTH = 1.4
MIN_NONBONDED = 2.3  # closest approach of atoms that are not bonded inside the ligand
MIN_PROTEIN_SPACING = 1.4
MIN_BULK_TO_LIGAND = 3.4
PROTEIN_DENSITY = 1.0 / 22.0  # heavy atoms per A^3
POCKET_RADIUS = (8.0, 14.0)
GRID_CELL = 2.4  # candidate grid; must stay wider than MIN_PROTEIN_SPACING
OPENING_HALF_ANGLE = np.deg2rad(60.0)
NEAR_NATIVE_FRACTION = (0.25, 0.40)
TRANSLATION_TRIES = 6  # docked poses take the least-clashing of this many translations
CONTACT_PROBABILITY = 0.9  # share of ligand atoms that get a complementary partner
MIN_CONTACT = 2.5  # closer ligand-protein pairs are clashes, not interactions
FAR_RMSD = 10.0
PDBID_ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyz"
PDBID_SPACE = 9 * 36**3  # first character 1-9, then three base-36 characters


@dataclass(frozen=True)
class _Role:
    """Chemistry of one atom type; valence ranges are used for protein atoms only."""

    element: int
    hybridization: int
    charge: float
    formal_charge: int
    hydrophobic: int
    aromatic: int
    acceptor: int
    donor: int
    ring: int
    heavy_valence: tuple[int, int] = (1, 1)
    hetero_valence: tuple[int, int] = (0, 0)


ROLES = {
    "c_aliphatic": _Role(C, 3, 0.0, 0, 1, 0, 0, 0, 0, (1, 3), (0, 0)),
    "c_aromatic": _Role(C, 2, 0.0, 0, 1, 1, 0, 0, 1, (2, 3), (0, 0)),
    "c_sp2": _Role(C, 2, 0.25, 0, 0, 0, 0, 0, 0, (2, 3), (1, 2)),
    "c_polar": _Role(C, 3, 0.1, 0, 0, 0, 0, 0, 0, (2, 3), (1, 1)),
    "n_donor": _Role(N, 2, -0.35, 0, 0, 0, 0, 1, 0, (2, 2), (0, 0)),
    "n_aromatic_acceptor": _Role(N, 2, -0.4, 0, 0, 1, 1, 0, 1, (2, 2), (0, 0)),
    "n_aromatic_donor": _Role(N, 2, -0.3, 0, 0, 1, 0, 1, 1, (2, 2), (0, 0)),
    "n_amine": _Role(N, 3, -0.3, 0, 0, 0, 1, 1, 0, (1, 1), (0, 0)),
    "n_tertiary": _Role(N, 3, -0.3, 0, 0, 0, 1, 0, 0, (3, 3), (0, 0)),
    "n_positive": _Role(N, 3, 0.75, 1, 0, 0, 0, 1, 0, (1, 1), (0, 0)),
    "o_carbonyl": _Role(O, 2, -0.45, 0, 0, 0, 1, 0, 0, (1, 1), (0, 0)),
    "o_hydroxyl": _Role(O, 3, -0.4, 0, 0, 0, 1, 1, 0, (1, 1), (0, 0)),
    "o_ether": _Role(O, 3, -0.35, 0, 0, 0, 1, 0, 0, (2, 2), (0, 0)),
    "o_negative": _Role(O, 2, -0.8, -1, 0, 0, 1, 0, 0, (1, 1), (0, 0)),
    "s_thioether": _Role(S, 3, -0.1, 0, 1, 0, 0, 0, 0, (1, 2), (0, 0)),
    "p_phosphate": _Role(P, 3, 0.4, 0, 0, 0, 0, 0, 0, (3, 4), (2, 3)),
    "halogen": _Role(HALOGEN, 3, -0.1, 0, 1, 0, 0, 0, 0, (1, 1), (0, 0)),
}
ROLE_NAMES = tuple(ROLES)
_ROLE_INDEX = {name: i for i, name in enumerate(ROLE_NAMES)}
_ROLE_TABLE = {
    field: np.array([getattr(role, field) for role in ROLES.values()]) for field in _Role.__dataclass_fields__
}

# Role mixtures: protein C 63%, N 17%, O 19%, S 1%; ligand by position in the molecule so that
# halogens are terminal and rings are mostly carbon (overall ~70% C, 12% N, 13% O, 3% halogen).
PROTEIN_MIX = {
    "c_aliphatic": 0.30,
    "c_aromatic": 0.09,
    "c_sp2": 0.14,
    "c_polar": 0.10,
    "n_donor": 0.13,
    "n_aromatic_acceptor": 0.015,
    "n_positive": 0.025,
    "o_carbonyl": 0.14,
    "o_hydroxyl": 0.025,
    "o_negative": 0.025,
    "s_thioether": 0.01,
}
LIGAND_MIX = {
    "aromatic_ring": {"c_aromatic": 0.86, "n_aromatic_acceptor": 0.10, "n_aromatic_donor": 0.04},
    "substituted_aromatic": {"c_aromatic": 1.0},
    "aliphatic_ring": {"c_aliphatic": 0.80, "n_tertiary": 0.10, "o_ether": 0.10},
    "terminal": {
        "c_aliphatic": 0.30,
        "o_carbonyl": 0.22,
        "o_hydroxyl": 0.10,
        "o_negative": 0.05,
        "n_amine": 0.08,
        "n_positive": 0.04,
        "halogen": 0.21,
    },
    "chain": {"c_aliphatic": 0.52, "c_sp2": 0.18, "n_donor": 0.12, "o_ether": 0.14, "s_thioether": 0.04},
    "branch": {"c_sp2": 0.45, "c_aliphatic": 0.38, "n_tertiary": 0.14, "p_phosphate": 0.03},
}
# Protein partner placed against a ligand atom: (role, distance range in A).
PARTNERS = {
    "o_negative": ("n_positive", (3.0, 3.5)),
    "n_positive": ("o_negative", (3.0, 3.5)),
    "donor": ("o_carbonyl", (3.0, 3.35)),
    "acceptor": ("n_donor", (3.0, 3.35)),
    "halogen": ("o_carbonyl", (3.0, 3.4)),
    "aromatic": ("c_aromatic", (3.6, 4.0)),
    "other": ("c_aliphatic", (3.7, 4.3)),
}


@dataclass
class _Atoms:
    """Per-atom chemistry; `features` lays it out as columns 3-21."""

    role: np.ndarray
    heavy_valence: np.ndarray
    hetero_valence: np.ndarray
    charge: np.ndarray
    hydrophobic: np.ndarray
    aromatic: np.ndarray
    ring: np.ndarray

    def field(self, name):
        """Role table column `name` for every atom."""
        return _ROLE_TABLE[name][self.role]

    def features(self, molcode):
        """Columns 3-21 as a float32 array."""
        one_hot = np.eye(9, dtype=np.float32)[self.field("element")]
        hybridization = np.where(self.aromatic == 1, 2, self.field("hybridization"))
        scalars = [
            hybridization,
            self.heavy_valence,
            self.hetero_valence,
            self.charge,
            np.full(len(self.role), molcode),
            self.hydrophobic,
            self.aromatic,
            self.field("acceptor"),
            self.field("donor"),
            self.ring,
        ]
        return np.concatenate([one_hot, np.stack(scalars, 1).astype(np.float32)], 1)


@dataclass
class _Ligand:
    """Crystal ligand geometry, topology and chemistry."""

    xyz: np.ndarray  # (n, 3)
    parent: np.ndarray  # growth parent; the subtree of a bond is what a torsion moves
    rotatable: np.ndarray  # atoms whose bond to their parent may be twisted
    subtree: np.ndarray  # (n, n) bool, subtree[c] = atoms that move when bond to c twists
    atoms: _Atoms


@dataclass
class SyntheticComplex:
    """One generated complex: crystal and docked poses with their attributes."""

    complex_id: str
    affinity: float
    crystal: np.ndarray  # (n_atoms, 22) float32
    crystal_attrs: dict
    poses: np.ndarray  # (n_poses, n_atoms, 22) float32, best score first
    pose_attrs: list  # one dict per pose
    n_ligand_atoms: int

    def pose_id(self, k):
        """Name of docked pose k."""
        return f"{self.complex_id}_pose{k:03d}"


# ---------------------------------------------------------------- geometry helpers


def _unit(vectors):
    return vectors / np.linalg.norm(vectors, axis=-1, keepdims=True)


def _random_units(rng, shape):
    return _unit(rng.normal(size=(*shape, 3)))


def _rotation_matrices(axis, angle):
    """Rodrigues rotation matrices for unit axes (..., 3) and angles (...)."""
    cos, sin = np.cos(angle)[..., None, None], np.sin(angle)[..., None, None]
    x, y, z = axis[..., 0], axis[..., 1], axis[..., 2]
    zero = np.zeros_like(x)
    cross = np.stack([zero, -z, y, z, zero, -x, -y, x, zero], -1).reshape(*axis.shape[:-1], 3, 3)
    outer = axis[..., :, None] * axis[..., None, :]
    return cos * np.eye(3) + sin * cross + (1.0 - cos) * outer


def _squared_distances(a, b):
    """Pairwise squared distances between a (..., n, 3) and b (m, 3), in a's precision."""
    flat = a.reshape(-1, 3)
    b = b.astype(flat.dtype, copy=False)
    # explicit differences, not a @ b.T: with K=3 a threaded BLAS only adds contention
    delta = np.subtract(flat[:, 0, None], b[:, 0])
    d2 = delta * delta
    for axis in (1, 2):
        np.subtract(flat[:, axis, None], b[:, axis], out=delta)
        delta *= delta
        d2 += delta
    return d2.reshape(*a.shape[:-1], len(b))


def _min_distances(a, b):
    return np.sqrt(_squared_distances(a, b).min(-1))


def _perpendicular_basis(direction):
    helper = np.array([1.0, 0.0, 0.0]) if abs(direction[0]) < 0.9 else np.array([0.0, 1.0, 0.0])
    first = _unit(np.cross(direction, helper))
    return first, np.cross(direction, first)


def _sample_roles(rng, mix, size):
    names = list(mix)
    weights = np.array([mix[name] for name in names])
    picks = rng.choice(len(names), size=size, p=weights / weights.sum())
    return np.array([_ROLE_INDEX[name] for name in names])[picks]
