"""Deterministic synthetic protein-ligand pose data in the PECAN HDF5 shard layout.

Each complex is a crystal ligand (a branched chain with some six-membered rings, ~1.5 A bonds)
with a pocket built around it: complementary partner atoms at 3.0-4.3 A from the ligand atoms
(acceptor faces donor, hydrophobic faces hydrophobic, charge faces opposite charge), then a bulk of
protein atoms at protein-like density (1 heavy atom per ~22 A^3, at least 1.4 A apart) that ends
where the requested atom count is used up (8-14 A from the ligand). A cone on one side is left empty
as the solvent opening. Docked poses are the crystal ligand with tail torsions, a rigid rotation and
a translation chosen to hit a target RMSD (about a third below 2 A, the rest up to 10 A); of a few
candidate translations the least clashing is kept, as a docking search would. Near-native poses keep
the pocket contacts while far decoys clash with the protein or leave through the opening.

Interaction counts are ligand-protein atom pairs within a cutoff: H-bonds (donor-acceptor, 3.5 A),
hydrophobic (4.5 A), halogen bonds (halogen-acceptor, 3.5 A), salt bridges (opposite formal charge,
4.0 A) and pi contacts (aromatic-aromatic, 5.5 A).

Every complex draws from its own generator seeded by (seed, global complex index), so any shard can
be produced without the ones before it and the same arguments give byte-identical arrays.
"""

from __future__ import annotations

import contextlib
import csv
import inspect
import json
import pathlib
from dataclasses import dataclass

import h5py
import numpy as np
from tqdm import tqdm

from pecan.data import format as shard_format
from pecan.fileio import atomic_path

SHARD_NAME = "shard_{:03d}.hdf5"
MARKER_NAME = ".synthetic.json"
LOCK_NAME = ".synthetic.lock"
GENERATOR_VERSION = 1

DOCKING_GROUP = shard_format.DEFAULT_POSE_GROUP
CRYSTAL_GROUP = shard_format.DEFAULT_CRYSTAL_GROUP
CRYSTAL_POSE_ID = CRYSTAL_GROUP.rpartition("/")[2]  # crystal rows use the group's own name
INTERACTION_NAMES = shard_format.INTERACTION_ATTRS
INTERACTION_CUTOFFS = np.array([3.5, 4.5, 3.5, 4.0, 5.5])  # A, same order
INDEX_COLUMNS = shard_format.INDEX_COLUMNS
N_COLUMNS = shard_format.N_COLUMNS
MOLCODE_COLUMN = shard_format.MOLCODE_COLUMN

# One-hot element slots of columns 3-11.
B, C, N, O, P, S, SE, HALOGEN, METAL = range(9)

BOND_LENGTH = 1.5
RING_BOND_LENGTH = 1.4
MIN_NONBONDED = 2.3          # closest approach of atoms that are not bonded inside the ligand
MIN_PROTEIN_SPACING = 1.4
MIN_BULK_TO_LIGAND = 3.4
PROTEIN_DENSITY = 1.0 / 22.0  # heavy atoms per A^3
POCKET_RADIUS = (8.0, 14.0)
GRID_CELL = 2.4              # candidate grid; must stay wider than MIN_PROTEIN_SPACING
OPENING_HALF_ANGLE = np.deg2rad(60.0)
NEAR_NATIVE_FRACTION = (0.25, 0.40)
TRANSLATION_TRIES = 6         # docked poses take the least-clashing of this many translations
CONTACT_PROBABILITY = 0.9     # share of ligand atoms that get a complementary partner
MIN_CONTACT = 2.5             # closer ligand-protein pairs are clashes, not interactions
FAR_RMSD = 10.0
PDBID_ALPHABET = "0123456789abcdefghijklmnopqrstuvwxyz"
PDBID_SPACE = 9 * 36 ** 3     # first character 1-9, then three base-36 characters


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
_ROLE_TABLE = {field: np.array([getattr(role, field) for role in ROLES.values()])
               for field in _Role.__dataclass_fields__}

# Role mixtures: protein C 63%, N 17%, O 19%, S 1%; ligand by position in the molecule so that
# halogens are terminal and rings are mostly carbon (overall ~70% C, 12% N, 13% O, 3% halogen).
PROTEIN_MIX = {"c_aliphatic": 0.30, "c_aromatic": 0.09, "c_sp2": 0.14, "c_polar": 0.10,
               "n_donor": 0.13, "n_aromatic_acceptor": 0.015, "n_positive": 0.025,
               "o_carbonyl": 0.14, "o_hydroxyl": 0.025, "o_negative": 0.025, "s_thioether": 0.01}
LIGAND_MIX = {
    "aromatic_ring": {"c_aromatic": 0.86, "n_aromatic_acceptor": 0.10, "n_aromatic_donor": 0.04},
    "substituted_aromatic": {"c_aromatic": 1.0},
    "aliphatic_ring": {"c_aliphatic": 0.80, "n_tertiary": 0.10, "o_ether": 0.10},
    "terminal": {"c_aliphatic": 0.30, "o_carbonyl": 0.22, "o_hydroxyl": 0.10, "o_negative": 0.05,
                 "n_amine": 0.08, "n_positive": 0.04, "halogen": 0.21},
    "chain": {"c_aliphatic": 0.52, "c_sp2": 0.18, "n_donor": 0.12, "o_ether": 0.14,
              "s_thioether": 0.04},
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
        scalars = [hybridization, self.heavy_valence, self.hetero_valence, self.charge,
                   np.full(len(self.role), molcode), self.hydrophobic, self.aromatic,
                   self.field("acceptor"), self.field("donor"), self.ring]
        return np.concatenate([one_hot, np.stack(scalars, 1).astype(np.float32)], 1)


@dataclass
class _Ligand:
    """Crystal ligand geometry, topology and chemistry."""

    xyz: np.ndarray            # (n, 3)
    parent: np.ndarray         # growth parent; the subtree of a bond is what a torsion moves
    rotatable: np.ndarray      # atoms whose bond to their parent may be twisted
    subtree: np.ndarray        # (n, n) bool, subtree[c] = atoms that move when bond to c twists
    atoms: _Atoms


@dataclass
class SyntheticComplex:
    """One generated complex: crystal and docked poses with their attributes."""

    pdbid: str
    affinity: float
    crystal: np.ndarray        # (n_atoms, 22) float32
    crystal_attrs: dict
    poses: np.ndarray          # (n_poses, n_atoms, 22) float32, best score first
    pose_attrs: list           # one dict per pose
    n_ligand_atoms: int

    def pose_id(self, k):
        """Name of docked pose k."""
        return f"{self.pdbid}_pose{k:03d}"


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


# ---------------------------------------------------------------- ligand

class _LigandBuilder:
    """Grows a self-avoiding branched chain, sometimes closing a planar six-membered ring."""

    RING_PROBABILITY = 0.18
    TIP_PROBABILITY = 0.75
    CANDIDATES = 12

    def __init__(self, rng, n_atoms):
        self.rng, self.n_atoms = rng, n_atoms
        self.xyz = np.zeros((n_atoms, 3))
        self.parent = np.full(n_atoms, -1)
        self.ring = np.full(n_atoms, -1)
        self.ring_start = np.zeros(n_atoms, bool)
        self.aromatic = np.zeros(n_atoms, bool)
        self.neighbours = [[] for _ in range(n_atoms)]
        self.ring_centres = []
        self.count = 0

    def build(self):
        """Grow the molecule to n_atoms atoms; returns self."""
        self._add(np.zeros(3), -1)
        self._add(np.array([BOND_LENGTH, 0.0, 0.0]), 0)
        tip, blocked = 1, set()
        while self.count < self.n_atoms:
            attach = self._pick_attach(tip, blocked)
            if self.n_atoms - self.count >= 6 and self.ring[attach] < 0 \
                    and self.rng.random() < self.RING_PROBABILITY:
                placed = self._place_ring(attach)
            else:
                placed = self._place_atom(attach)
            if placed is None:
                blocked.add(attach)
            else:
                tip = placed
        return self

    def _add(self, position, parent):
        index = self.count
        self.xyz[index] = position
        self.parent[index] = parent
        if parent >= 0:
            self._bond(parent, index)
        self.count += 1
        return index

    def _bond(self, a, b):
        self.neighbours[a].append(b)
        self.neighbours[b].append(a)

    def _pick_attach(self, tip, blocked):
        open_atoms = [i for i in range(self.count)
                      if len(self.neighbours[i]) < 3 and i not in blocked]
        if not open_atoms:
            raise RuntimeError("ligand growth ran out of open atoms")
        if tip in open_atoms and self.rng.random() < self.TIP_PROBABILITY:
            return tip
        return open_atoms[self.rng.integers(len(open_atoms))]

    def _directions(self, attach):
        """Candidate unit bond directions leaving `attach` with plausible angles."""
        k = self.CANDIDATES
        if self.ring[attach] >= 0:
            # exocyclic bonds lie in the ring plane, pointing away from the centre
            outward = _unit(self.xyz[attach] - self.ring_centres[self.ring[attach]])
            return _unit(outward + 0.08 * self.rng.normal(size=(k, 3)))
        reference = _unit(self.xyz[self.neighbours[attach][0]] - self.xyz[attach])
        first, second = _perpendicular_basis(reference)
        angle = np.deg2rad(self.rng.uniform(109.5, 120.0, k))
        torsion = self.rng.uniform(0.0, 2 * np.pi, k)
        sideways = np.cos(torsion)[:, None] * first + np.sin(torsion)[:, None] * second
        return np.cos(angle)[:, None] * reference + np.sin(angle)[:, None] * sideways

    def _clear(self, positions, attach):
        """Which candidate groups (k, m, 3) keep MIN_NONBONDED from every atom but `attach`."""
        others = np.delete(self.xyz[:self.count], attach, axis=0)
        d2 = _squared_distances(positions, others).reshape(len(positions), -1)
        return d2.min(1) >= MIN_NONBONDED ** 2

    def _place_atom(self, attach):
        positions = self.xyz[attach] + BOND_LENGTH * self._directions(attach)
        clear = np.flatnonzero(self._clear(positions[:, None], attach))
        if len(clear) == 0:
            return None
        return self._add(positions[clear[0]], attach)

    def _place_ring(self, attach):
        directions = self._directions(attach)
        in_plane = _unit(np.cross(directions, _random_units(self.rng, (len(directions),))))
        centres = self.xyz[attach] + (BOND_LENGTH + RING_BOND_LENGTH) * directions
        phase = np.deg2rad(60.0 * np.arange(6))
        offsets = (-np.cos(phase)[None, :, None] * directions[:, None]
                   + np.sin(phase)[None, :, None] * in_plane[:, None])
        rings = centres[:, None] + RING_BOND_LENGTH * offsets
        clear = np.flatnonzero(self._clear(rings, attach))
        if len(clear) == 0:
            return None
        ring_id = len(self.ring_centres)
        self.ring_centres.append(centres[clear[0]])
        aromatic = self.rng.random() < 0.8
        members = []
        for position in rings[clear[0]]:
            members.append(self._add(position, members[-1] if members else attach))
        self._bond(members[-1], members[0])
        self.ring[members] = ring_id
        self.ring_start[members[0]] = True
        self.aromatic[members] = aromatic
        return members[3]


def _subtrees(parent):
    """subtree[c, j] is True when atom j descends from (or is) atom c; parents precede children."""
    n = len(parent)
    ancestors = np.zeros((n, n), bool)
    for j in range(n):
        if parent[j] >= 0:
            ancestors[j] = ancestors[parent[j]]
        ancestors[j, j] = True
    return ancestors.T


def _ligand_chemistry(rng, builder):
    """Assign roles by position (ring, terminal, chain, branch) and derive valences from bonds."""
    n = builder.n_atoms
    degree = np.array([len(nb) for nb in builder.neighbours])
    in_ring = builder.ring >= 0
    aromatic = in_ring & builder.aromatic
    classes = np.select(
        [aromatic & (degree > 2), aromatic, in_ring, degree <= 1, degree == 2],
        ["substituted_aromatic", "aromatic_ring", "aliphatic_ring", "terminal", "chain"], "branch")
    role = np.zeros(n, int)
    for name, mix in LIGAND_MIX.items():
        members = np.flatnonzero(classes == name)
        role[members] = _sample_roles(rng, mix, len(members))
    element = _ROLE_TABLE["element"][role]
    hetero = np.array([(element[nb] != C).sum() for nb in builder.neighbours])
    carbon = element == C
    hydrophobic = np.where(carbon, hetero == 0, _ROLE_TABLE["hydrophobic"][role]).astype(int)
    return _Atoms(role=role, heavy_valence=degree, hetero_valence=hetero,
                  charge=_partial_charges(rng, role), hydrophobic=hydrophobic,
                  aromatic=aromatic.astype(int), ring=in_ring.astype(int))


def _partial_charges(rng, role):
    """Role mean plus noise; formal charges stay beyond +-0.55, neutral atoms within +-0.5."""
    noisy = _ROLE_TABLE["charge"][role] + rng.normal(0.0, 0.12, len(role))
    formal = _ROLE_TABLE["formal_charge"][role]
    charged = [np.clip(noisy, 0.55, 1.0), np.clip(noisy, -1.0, -0.55)]
    return np.select([formal > 0, formal < 0], charged, np.clip(noisy, -0.5, 0.5))


def _make_ligand(rng, n_atoms):
    builder = _LigandBuilder(rng, n_atoms).build()
    rotation = _rotation_matrices(_random_units(rng, ()), rng.uniform(0, np.pi))
    centred = builder.xyz - builder.xyz.mean(0)
    xyz = centred @ rotation.T + rng.uniform(-8.0, 8.0, 3)
    subtree = _subtrees(builder.parent)
    has_tail = subtree.sum(1) > 1
    twistable = (builder.parent >= 0) & ((builder.ring < 0) | builder.ring_start) & has_tail
    return _Ligand(xyz=xyz, parent=builder.parent, rotatable=np.flatnonzero(twistable),
                   subtree=subtree, atoms=_ligand_chemistry(rng, builder))


# ---------------------------------------------------------------- pocket

def _partner_key(atoms):
    """Which PARTNERS entry each ligand atom asks for, most specific interaction first."""
    role_names = np.array(ROLE_NAMES)[atoms.role]
    conditions = [role_names == "o_negative", role_names == "n_positive",
                  atoms.field("donor") == 1, atoms.field("acceptor") == 1,
                  atoms.field("element") == HALOGEN, atoms.aromatic == 1]
    keys = ["o_negative", "n_positive", "donor", "acceptor", "halogen", "aromatic"]
    return np.select(conditions, keys, "other")


def _in_opening(points, centre, opening):
    return (_unit(points - centre) @ opening) > np.cos(OPENING_HALF_ANGLE)


def _contact_atoms(rng, ligand, opening):
    """Complementary partners facing ligand atoms; returns (xyz, role)."""
    lig = ligand.xyz
    keys = _partner_key(ligand.atoms)
    # polar atoms ask twice: a buried donor or acceptor usually has more than one partner
    polar = np.flatnonzero(np.isin(keys, ["o_negative", "n_positive", "donor", "acceptor"]))
    requests = rng.permutation(np.concatenate([np.arange(len(lig)), polar]))
    roles = np.array([_ROLE_INDEX[PARTNERS[key][0]] for key in keys[requests]])
    ranges = np.array([PARTNERS[key][1] for key in keys[requests]])
    k = 12
    radius = rng.uniform(ranges[:, :1], ranges[:, 1:], (len(requests), k))
    candidates = lig[requests, None] + radius[..., None] * _random_units(rng, (len(requests), k))
    clear = _min_distances(candidates.reshape(-1, 3), lig).reshape(len(requests), k) >= 3.0
    clear &= ~_in_opening(candidates, lig.mean(0), opening)
    clear &= (rng.random(len(requests)) < CONTACT_PROBABILITY)[:, None]
    placed_xyz, placed_role = [], []
    for i in np.flatnonzero(clear.any(1)):
        options = candidates[i][clear[i]]
        if placed_xyz:
            # partners of neighbouring ligand atoms must not pile onto each other
            options = options[_min_distances(options, np.array(placed_xyz)) >= 2.6]
        if len(options):
            placed_xyz.append(options[0])
            placed_role.append(roles[i])
    return np.array(placed_xyz).reshape(-1, 3), np.array(placed_role, int)


def _jittered_grid(rng, low, high, cell):
    """One uniform point per cell, then drop one of every pair closer than MIN_PROTEIN_SPACING."""
    shape = np.maximum(np.ceil((high - low) / cell).astype(int), 1)
    index = np.stack(np.meshgrid(*[np.arange(s) for s in shape], indexing="ij"), -1)
    points = low + (index + rng.random((*shape, 3))) * cell
    priority = rng.random(tuple(shape))
    keep = np.ones(tuple(shape), bool)
    # spacing <= cell, so only the 13 forward neighbour cells can hold a conflicting point
    offsets = [(dx, dy, dz) for dx in (0, 1) for dy in (-1, 0, 1) for dz in (-1, 0, 1)
               if (dx, dy, dz) > (0, 0, 0)]
    for offset in offsets:
        here, there = _shifted_slices(shape, offset)
        close = ((points[here] - points[there]) ** 2).sum(-1) < MIN_PROTEIN_SPACING ** 2
        lose_here = close & (priority[here] < priority[there])
        keep[here] &= ~lose_here
        keep[there] &= ~(close & ~lose_here)
    return points[keep], keep.mean() / cell ** 3


def _shifted_slices(shape, offset):
    here, there = [], []
    for size, step in zip(shape, offset):
        here.append(slice(max(0, -step), size - max(0, step)))
        there.append(slice(max(0, step), size - max(0, -step)))
    return tuple(here), tuple(there)


def _bulk_atoms(rng, ligand_xyz, count, fixed_xyz, opening):
    """`count` protein atoms filling the shell around the ligand at PROTEIN_DENSITY."""
    centre = ligand_xyz.mean(0)
    outer = POCKET_RADIUS[1]
    while True:
        reach = np.linalg.norm(ligand_xyz - centre, axis=1).max() + outer
        points, density = _jittered_grid(rng, centre - reach, centre + reach, GRID_CELL)
        points = points[np.linalg.norm(points - centre, axis=1) <= reach]
        distance = _min_distances(points, ligand_xyz)
        usable = (distance >= MIN_BULK_TO_LIGAND) & (distance <= outer)
        usable &= ~_in_opening(points, centre, opening)
        if len(fixed_xyz):
            usable &= _min_distances(points, fixed_xyz) >= MIN_PROTEIN_SPACING
        if usable.sum() >= count:
            break
        # more atoms than a protein holds this close: let the pocket reach further out
        outer *= 1.25
    points, distance = points[usable], distance[usable]
    # the shell ends where the requested atoms reach protein-like density
    needed = int(np.ceil(count * density / PROTEIN_DENSITY))
    order = np.argsort(distance, kind="stable")
    radius = max(distance[order[min(needed, len(order)) - 1]], POCKET_RADIUS[0])
    inside = np.flatnonzero(distance <= radius)
    if len(inside) < count:
        inside = order[:count]
    return points[np.sort(rng.choice(inside, count, replace=False))]


def _protein_chemistry(rng, role):
    heavy = _ROLE_TABLE["heavy_valence"][role]
    hetero = _ROLE_TABLE["hetero_valence"][role]
    return _Atoms(role=role,
                  heavy_valence=rng.integers(heavy[:, 0], heavy[:, 1] + 1),
                  hetero_valence=rng.integers(hetero[:, 0], hetero[:, 1] + 1),
                  charge=_partial_charges(rng, role),
                  hydrophobic=_ROLE_TABLE["hydrophobic"][role],
                  aromatic=_ROLE_TABLE["aromatic"][role], ring=_ROLE_TABLE["ring"][role])


def _make_pocket(rng, ligand, n_atoms):
    """Pocket atoms (xyz, _Atoms) in a shuffled order that hides how they were placed."""
    opening = _random_units(rng, ())
    contact_xyz, contact_role = _contact_atoms(rng, ligand, opening)
    contact_xyz, contact_role = contact_xyz[:n_atoms], contact_role[:n_atoms]
    bulk_xyz = _bulk_atoms(rng, ligand.xyz, n_atoms - len(contact_xyz), contact_xyz, opening)
    bulk_role = _sample_roles(rng, PROTEIN_MIX, len(bulk_xyz))
    order = rng.permutation(n_atoms)
    xyz = np.concatenate([contact_xyz, bulk_xyz])[order]
    role = np.concatenate([contact_role, bulk_role])[order]
    return xyz, _protein_chemistry(rng, role)


# ---------------------------------------------------------------- poses

def _target_rmsds(rng, n_poses):
    near = rng.random(n_poses) < rng.uniform(*NEAR_NATIVE_FRACTION)
    return np.where(near, rng.uniform(0.25, 2.0, n_poses), rng.uniform(2.0, FAR_RMSD, n_poses))


def _twist_and_turn(ligand, bonds, torsions, axis, angle):
    """Apply per-pose tail torsions, then a rigid rotation about the crystal centroid."""
    n_poses = len(angle)
    xyz = np.broadcast_to(ligand.xyz, (n_poses, *ligand.xyz.shape)).copy()
    rows = np.arange(n_poses)
    for step in range(bonds.shape[1]):
        child = bonds[:, step]
        origin = xyz[rows, ligand.parent[child]]
        rotation = _rotation_matrices(_unit(xyz[rows, child] - origin), torsions[:, step])
        moved = (xyz - origin[:, None]) @ rotation.transpose(0, 2, 1) + origin[:, None]
        xyz = np.where(ligand.subtree[child][..., None], moved, xyz)
    centre = ligand.xyz.mean(0)
    rotation = _rotation_matrices(axis, angle)
    return (xyz - centre) @ rotation.transpose(0, 2, 1) + centre


def _docked_ligands(rng, ligand, targets, pocket_xyz):
    """Ligand coordinates (n_poses, n, 3) whose RMSD to the crystal equals `targets`."""
    n_poses, max_steps = len(targets), 3
    if len(ligand.rotatable):
        bonds = ligand.rotatable[rng.integers(0, len(ligand.rotatable), (n_poses, max_steps))]
    else:
        bonds = np.zeros((n_poses, 0), int)
    used = np.arange(bonds.shape[1]) < rng.integers(0, max_steps + 1, n_poses)[:, None]
    torsion_draw = rng.uniform(-1.0, 1.0, bonds.shape) * used
    axis, turn_draw = _random_units(rng, (n_poses,)), rng.random(n_poses)
    directions = _random_units(rng, (n_poses, TRANSLATION_TRIES))
    radius = np.sqrt(((ligand.xyz - ligand.xyz.mean(0)) ** 2).sum(1).mean())
    scale = np.ones(n_poses)
    for _ in range(10):
        torsions = scale[:, None] * torsion_draw * np.minimum(np.pi, targets / 1.5)[:, None]
        angle = scale * turn_draw * np.minimum(np.pi, targets / radius)
        xyz = _twist_and_turn(ligand, bonds, torsions, axis, angle)
        squared = ((xyz - ligand.xyz) ** 2).sum(-1).mean(1)
        # leave room for a translation to make up the rest of the target
        overshoot = squared > (0.9 * targets) ** 2
        if not overshoot.any():
            break
        scale[overshoot] *= 0.5
    # |d + s u|^2 averaged over atoms equals target^2 for this shift s along each direction u
    along = ((xyz - ligand.xyz).mean(1)[:, None] * directions).sum(-1)
    room = (targets ** 2 - squared)[:, None]
    shift = np.maximum(-along + np.sqrt(np.maximum(along ** 2 + room, 0.0)), 0.0)
    moves = shift[..., None] * directions
    best = _fewest_clashes(xyz, moves, pocket_xyz)
    return xyz + moves[np.arange(n_poses), best][:, None]


def _fewest_clashes(xyz, moves, pocket_xyz, probes=8):
    """Index of the move per pose that overlaps the protein least, as a docking search would."""
    # a handful of spread-out ligand atoms ranks the candidate moves well enough
    probe_xyz = xyz[:, ::max(1, xyz.shape[1] // probes)]
    placed = probe_xyz[:, None] + moves[:, :, None]
    clashes = (_squared_distances(placed, pocket_xyz) < MIN_CONTACT ** 2).sum((-1, -2))
    return clashes.argmin(1)


def _pair_masks(ligand_atoms, pocket_atoms):
    """(5, n_ligand, n_pocket) bool masks of atom pairs that can form each interaction."""
    lig, pro = ligand_atoms, pocket_atoms

    def pairs(a, b):
        return a.astype(bool)[:, None] & b.astype(bool)[None, :]

    hbond = pairs(lig.field("donor"), pro.field("acceptor")) \
        | pairs(lig.field("acceptor"), pro.field("donor"))
    salt = pairs(lig.field("formal_charge") > 0, pro.field("formal_charge") < 0) \
        | pairs(lig.field("formal_charge") < 0, pro.field("formal_charge") > 0)
    masks = [hbond, pairs(lig.hydrophobic, pro.hydrophobic),
             pairs(lig.field("element") == HALOGEN, pro.field("acceptor")), salt,
             pairs(lig.aromatic, pro.aromatic)]
    return np.stack(masks)


def _interaction_counts(ligand_xyz, pocket_xyz, masks):
    """(n_poses, 5) pair counts in INTERACTION_NAMES order."""
    n_poses = len(ligand_xyz)
    d2 = _squared_distances(ligand_xyz, pocket_xyz).reshape(n_poses, -1)
    # few pairs are in range, so test the interaction types on those alone
    pose, pair = np.nonzero((d2 < INTERACTION_CUTOFFS.max() ** 2) & (d2 >= MIN_CONTACT ** 2))
    in_reach = d2[pose, pair] < INTERACTION_CUTOFFS[:, None] ** 2
    hits = masks.reshape(len(masks), -1)[:, pair] & in_reach
    return np.stack([np.bincount(pose, weights=row, minlength=n_poses) for row in hits], 1)


def _scores(rng, best, rmsd):
    """Vina-like kcal/mol: worse with RMSD, noisy enough that ranking by score is imperfect."""
    score = best + 0.45 * np.minimum(rmsd, 8.0) + rng.normal(0.0, 0.9, len(rmsd))
    return np.clip(score, -14.0, -1.0)


# ---------------------------------------------------------------- complexes

def pdbid_for(index, seed=0):
    """Deterministic PDB-like code (digit 1-9 + 3 base-36 characters) for global complex `index`."""
    if not 0 <= index < PDBID_SPACE:
        raise ValueError(f"complex index {index} outside 0..{PDBID_SPACE - 1}")
    # an affine map with a multiplier coprime to 2 and 3 is a bijection on PDBID_SPACE
    code = (104729 * index + 7919 * seed + 1013) % PDBID_SPACE
    chars = []
    for _ in range(3):
        code, digit = divmod(code, 36)
        chars.append(PDBID_ALPHABET[digit])
    return str(code + 1) + "".join(reversed(chars))


def _uniform_int(rng, bounds):
    return int(rng.integers(bounds[0], bounds[1] + 1))


def generate_complex(index, seed=0, poses_per_complex=(10, 30), pocket_atoms=(300, 900),
                     ligand_atoms=(15, 60), rmsd_threshold=2.0):
    """Build complex number `index` of the data set drawn with `seed` (no file I/O)."""
    rng = np.random.default_rng([seed, index])
    ligand = _make_ligand(rng, _uniform_int(rng, ligand_atoms))
    pocket_xyz, pocket = _make_pocket(rng, ligand, _uniform_int(rng, pocket_atoms))
    n_poses = _uniform_int(rng, poses_per_complex)
    docked = _docked_ligands(rng, ligand, _target_rmsds(rng, n_poses), pocket_xyz)
    # attributes are computed from the float32 coordinates that land in the file
    ligand_xyz = np.concatenate([ligand.xyz[None], docked]).astype(np.float32)
    geometry = ligand_xyz.astype(np.float64)
    rmsd = np.sqrt(((geometry - geometry[0]) ** 2).sum(-1).mean(1))
    counts = _interaction_counts(ligand_xyz, pocket_xyz.astype(np.float32),
                                 _pair_masks(ligand.atoms, pocket))
    affinity, score = _affinity_and_scores(rng, len(ligand.xyz), rmsd)
    arrays = _pose_arrays(ligand, pocket_xyz, pocket, ligand_xyz)
    attrs = [_pose_attrs(rmsd[k], score[k], counts[k], rmsd_threshold) for k in range(len(rmsd))]
    attrs[0]["rmsd"], attrs[0]["label"] = 0.0, 1
    # docking programs list poses best score first
    order = 1 + np.argsort(score[1:], kind="stable")
    return SyntheticComplex(pdbid=pdbid_for(index, seed), affinity=affinity, crystal=arrays[0],
                            crystal_attrs=attrs[0], poses=arrays[order],
                            pose_attrs=[attrs[k] for k in order], n_ligand_atoms=len(ligand.xyz))


def _affinity_and_scores(rng, n_ligand, rmsd):
    """pK that grows with ligand size, and scores for the crystal (rmsd[0]) and docked poses."""
    affinity = float(np.clip(2.5 + 0.09 * n_ligand + rng.normal(0.0, 1.2), 2.0, 11.0))
    best = -(0.85 * affinity + 2.0) + rng.normal(0.0, 0.6)
    crystal = best + rng.normal(0.0, 0.3)
    return affinity, np.concatenate([[crystal], _scores(rng, best, rmsd[1:])])


def _pose_arrays(ligand, pocket_xyz, pocket, ligand_xyz):
    """(n_poses, n_atoms, 22) float32: ligand rows, then the shared pocket rows."""
    template = np.concatenate([
        np.concatenate([ligand.xyz, ligand.atoms.features(+1)], 1),
        np.concatenate([pocket_xyz, pocket.features(-1)], 1)]).astype(np.float32)
    arrays = np.broadcast_to(template, (len(ligand_xyz), *template.shape)).copy()
    arrays[:, :len(ligand.xyz), :3] = ligand_xyz
    return arrays


def _pose_attrs(rmsd, score, counts, rmsd_threshold):
    attrs = {"rmsd": float(rmsd), "score": float(score), "label": int(rmsd < rmsd_threshold)}
    attrs.update({name: float(value) for name, value in zip(INTERACTION_NAMES, counts)})
    return attrs


# ---------------------------------------------------------------- files

def _write_pose(parent, name, data, attrs):
    group = parent.create_group(name)
    group.create_dataset(shard_format.DATASET_NAME, data=data)
    for key, value in attrs.items():
        group.attrs[key] = value


def _write_complex(h5, record, with_crystal):
    group = h5.create_group(record.pdbid)
    group.attrs["affinity"] = record.affinity
    docking = group.create_group(DOCKING_GROUP)
    for k, attrs in enumerate(record.pose_attrs):
        _write_pose(docking, record.pose_id(k), record.poses[k], attrs)
    if with_crystal:
        _write_pose(group, CRYSTAL_GROUP, record.crystal, record.crystal_attrs)


def _index_rows(shard_name, record, with_crystal):
    poses = [(record.pose_id(k), attrs, 0) for k, attrs in enumerate(record.pose_attrs)]
    if with_crystal:
        poses.insert(0, (CRYSTAL_POSE_ID, record.crystal_attrs, 1))
    for pose_id, attrs, is_crystal in poses:
        values = {"shard": shard_name, "pdbid": record.pdbid, "poseid": pose_id,
                  "affinity": record.affinity, "is_crystal": is_crystal, **attrs}
        yield [repr(values[column]) if isinstance(values[column], float) else values[column]
               for column in INDEX_COLUMNS]


def _write_index(path, rows):
    with atomic_path(path) as temporary:
        with open(temporary, "w", newline="") as handle:
            writer = csv.writer(handle)
            writer.writerow(INDEX_COLUMNS)
            writer.writerows(rows)


def _check_range(name, bounds, minimum):
    lo, hi = bounds
    if not (isinstance(lo, (int, np.integer)) and isinstance(hi, (int, np.integer))
            and minimum <= lo <= hi):
        raise ValueError(f"{name} must be integers (lo, hi) with {minimum} <= lo <= hi, "
                         f"got {bounds!r}")
    return int(lo), int(hi)


def generate_dataset(out_dir, n_shards=2, complexes_per_shard=10, poses_per_complex=(10, 30),
                     pocket_atoms=(300, 900), ligand_atoms=(15, 60), with_crystal=True,
                     rmsd_threshold=2.0, seed=0, index_name="index.csv", progress=True):
    """Write shards shard_000.hdf5 ... plus the index CSV into out_dir; return the shard paths."""
    settings = {"poses_per_complex": _check_range("poses_per_complex", poses_per_complex, 1),
                "pocket_atoms": _check_range("pocket_atoms", pocket_atoms, 1),
                "ligand_atoms": _check_range("ligand_atoms", ligand_atoms, 6),
                "rmsd_threshold": float(rmsd_threshold), "seed": int(seed)}
    if n_shards < 1 or complexes_per_shard < 1:
        raise ValueError("n_shards and complexes_per_shard must be >= 1")
    if n_shards * complexes_per_shard > PDBID_SPACE:
        raise ValueError(f"at most {PDBID_SPACE} complexes have distinct PDB-like ids")
    out_dir = pathlib.Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    # whatever marker was here described other files from now on
    (out_dir / MARKER_NAME).unlink(missing_ok=True)
    shards, rows = [], []
    with tqdm(total=n_shards * complexes_per_shard, disable=not progress, desc="synthetic",
              unit="complex") as bar:
        for shard in range(n_shards):
            path = out_dir / SHARD_NAME.format(shard)
            with atomic_path(path) as temporary, h5py.File(temporary, "w") as h5:
                for j in range(complexes_per_shard):
                    record = generate_complex(shard * complexes_per_shard + j, **settings)
                    _write_complex(h5, record, with_crystal)
                    rows.extend(_index_rows(path.name, record, with_crystal))
                    bar.update()
            shards.append(path)
    _write_index(out_dir / index_name, rows)
    return shards


# ---------------------------------------------------------------- ensure

def _marker_arguments(kwargs):
    """All generate_dataset arguments that shape the data, defaults filled, JSON-comparable."""
    bound = inspect.signature(generate_dataset).bind("unused", **kwargs)
    bound.apply_defaults()
    arguments = dict(bound.arguments)
    for key in ("out_dir", "progress"):
        arguments.pop(key)
    return json.loads(json.dumps(arguments))


@contextlib.contextmanager
def _directory_lock(directory):
    """Serialise concurrent callers (e.g. several ranks); a no-op where flock is unavailable."""
    try:
        import fcntl
        handle = open(pathlib.Path(directory) / LOCK_NAME, "a")
    except (ImportError, OSError):
        yield
        return
    with handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX)
        except OSError:
            pass
        yield


def _read_marker(path):
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def ensure_dataset(out_dir, **kwargs):
    """Generate unless out_dir already holds a complete dataset made with the same arguments."""
    out_dir = pathlib.Path(out_dir)
    arguments = _marker_arguments(kwargs)
    marker_path = out_dir / MARKER_NAME
    out_dir.mkdir(parents=True, exist_ok=True)
    with _directory_lock(out_dir):
        marker = _read_marker(marker_path)
        if _marker_matches(out_dir, marker, arguments):
            return [out_dir / name for name in marker["shards"]]
        shards = generate_dataset(out_dir, **kwargs)
        _remove_stale_shards(out_dir, marker, shards)
        payload = {"version": GENERATOR_VERSION, "arguments": arguments,
                   "shards": [path.name for path in shards], "index": arguments["index_name"]}
        with atomic_path(marker_path) as temporary:
            temporary.write_text(json.dumps(payload, indent=1, sort_keys=True))
    return shards


def dataset_is_current(out_dir, **kwargs):
    """True when out_dir holds a complete dataset that ensure_dataset made with these arguments."""
    out_dir = pathlib.Path(out_dir)
    return _marker_matches(out_dir, _read_marker(out_dir / MARKER_NAME), _marker_arguments(kwargs))


def _marker_matches(out_dir, marker, arguments):
    if not isinstance(marker, dict) or marker.get("version") != GENERATOR_VERSION:
        return False
    if marker.get("arguments") != arguments:
        return False
    names = [*marker.get("shards", []), marker.get("index", "")]
    return all(name and (out_dir / name).is_file() for name in names)


def _remove_stale_shards(out_dir, marker, shards):
    """Delete shards an earlier, larger generation left behind (only ones its marker listed)."""
    if not isinstance(marker, dict):
        return
    current = {path.name for path in shards}
    for name in marker.get("shards", []):
        if name not in current and pathlib.Path(name).name == name:
            (out_dir / name).unlink(missing_ok=True)
