"""Crystal ligands (branched chains with rings) and the pockets built around them."""

from __future__ import annotations

import numpy as np

from pecan.synthetic.chemistry import (
    _ROLE_INDEX,
    _ROLE_TABLE,
    BOND_LENGTH,
    CONTACT_PROBABILITY,
    GRID_CELL,
    HALOGEN,
    LIGAND_MIX,
    MIN_BULK_TO_LIGAND,
    MIN_NONBONDED,
    MIN_PROTEIN_SPACING,
    OPENING_HALF_ANGLE,
    PARTNERS,
    POCKET_RADIUS,
    PROTEIN_DENSITY,
    PROTEIN_MIX,
    RING_BOND_LENGTH,
    ROLE_NAMES,
    C,
    _Atoms,
    _Ligand,
    _min_distances,
    _perpendicular_basis,
    _random_units,
    _rotation_matrices,
    _sample_roles,
    _squared_distances,
    _unit,
)

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
            if self.n_atoms - self.count >= 6 and self.ring[attach] < 0 and self.rng.random() < self.RING_PROBABILITY:
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
        open_atoms = [i for i in range(self.count) if len(self.neighbours[i]) < 3 and i not in blocked]
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
        others = np.delete(self.xyz[: self.count], attach, axis=0)
        d2 = _squared_distances(positions, others).reshape(len(positions), -1)
        return d2.min(1) >= MIN_NONBONDED**2

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
        offsets = -np.cos(phase)[None, :, None] * directions[:, None] + np.sin(phase)[None, :, None] * in_plane[:, None]
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
        ["substituted_aromatic", "aromatic_ring", "aliphatic_ring", "terminal", "chain"],
        "branch",
    )
    role = np.zeros(n, int)
    for name, mix in LIGAND_MIX.items():
        members = np.flatnonzero(classes == name)
        role[members] = _sample_roles(rng, mix, len(members))
    element = _ROLE_TABLE["element"][role]
    hetero = np.array([(element[nb] != C).sum() for nb in builder.neighbours])
    carbon = element == C
    hydrophobic = np.where(carbon, hetero == 0, _ROLE_TABLE["hydrophobic"][role]).astype(int)
    return _Atoms(
        role=role,
        heavy_valence=degree,
        hetero_valence=hetero,
        charge=_partial_charges(rng, role),
        hydrophobic=hydrophobic,
        aromatic=aromatic.astype(int),
        ring=in_ring.astype(int),
    )


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
    return _Ligand(
        xyz=xyz,
        parent=builder.parent,
        rotatable=np.flatnonzero(twistable),
        subtree=subtree,
        atoms=_ligand_chemistry(rng, builder),
    )


# ---------------------------------------------------------------- pocket


def _partner_key(atoms):
    """Which PARTNERS entry each ligand atom asks for, most specific interaction first."""
    role_names = np.array(ROLE_NAMES)[atoms.role]
    conditions = [
        role_names == "o_negative",
        role_names == "n_positive",
        atoms.field("donor") == 1,
        atoms.field("acceptor") == 1,
        atoms.field("element") == HALOGEN,
        atoms.aromatic == 1,
    ]
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
    offsets = [(dx, dy, dz) for dx in (0, 1) for dy in (-1, 0, 1) for dz in (-1, 0, 1) if (dx, dy, dz) > (0, 0, 0)]
    for offset in offsets:
        here, there = _shifted_slices(shape, offset)
        close = ((points[here] - points[there]) ** 2).sum(-1) < MIN_PROTEIN_SPACING**2
        lose_here = close & (priority[here] < priority[there])
        keep[here] &= ~lose_here
        keep[there] &= ~(close & ~lose_here)
    return points[keep], keep.mean() / cell**3


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
    return _Atoms(
        role=role,
        heavy_valence=rng.integers(heavy[:, 0], heavy[:, 1] + 1),
        hetero_valence=rng.integers(hetero[:, 0], hetero[:, 1] + 1),
        charge=_partial_charges(rng, role),
        hydrophobic=_ROLE_TABLE["hydrophobic"][role],
        aromatic=_ROLE_TABLE["aromatic"][role],
        ring=_ROLE_TABLE["ring"][role],
    )


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
