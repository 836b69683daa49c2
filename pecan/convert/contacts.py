"""The five pose-level interaction counts of ``interactions.InteractionCounter``, exact and vectorised.

``InteractionCounter`` asks ProLIF 2.2 for a count fingerprint of every pose. The counts follow from a few
geometric rules over SMARTS-matched atom groups, so this module evaluates those rules directly with numpy:
the receptor's matches and coordinates are prepared once per pocket, a ligand's matches once per topology
(a docking run's poses share one), and poses of one topology are counted together as arrays
[poses, atoms, 3]. On the 413 redocked corpus complexes (benchmarks/bench_contacts.py, medians over
complexes): ProLIF 40.8 ms a pose, ``counts`` 1.95 ms, ``counts_many``/``counts_for_coords`` 0.41 ms; the
per-pocket setup costs 58 ms against ProLIF's 29 ms. All 7,426 molecules gave ProLIF's counts.

What the counts are (the behaviour replicated; tests/convert/test_contacts.py checks it against ProLIF):

- Residues. ProLIF splits both molecules into residue fragments (bonds between residues cut) and matches
  every SMARTS on each fragment, so a pattern never sees across a residue boundary; this module matches on
  ProLIF's own fragments. The fragments come from the pocket as cut (a residue whose neighbour was cut
  away is sanitised without it), but with whole residues that did not matter: cutting the pocket around
  each pose alone instead of 8 A around all poses changed no count (8 A: 1,001 poses of 60 complexes;
  6 and 4.5 A: 309 poses of 20; ``bench_contacts.py --pocket-cut``).
- Pairs. Only receptor residues with an atom (hydrogens included) within 6.0 A of an atom of the ligand
  residue are paired with it. Every rule but stacking needs two of their atoms within 4.5 A, so the search
  can only drop stacked ring pairs, and only those are checked against it. A receptor residue with the
  ligand's residue id (UNL1 without chain for a pose without PDB residue info) is skipped.
- Counting. Every (ligand match, receptor match) pair that satisfies a rule counts once; nothing is
  de-duplicated: a donor with two hydrogens counts twice against one acceptor when both hydrogens qualify.
  Face-to-face and edge-to-face are counted separately (with the default limits their plane-angle ranges
  are disjoint, so a ring pair counts at most once).
- Rules (patterns and thresholds are read from ProLIF's interaction objects; defaults given):
  distance rules between the first atoms of the matches (Hydrophobic 4.5 A, Cationic/Anionic 4.5 A);
  hydrogen bonds: acceptor to donor heavy atom <= 3.5 A and the angle at the hydrogen between donor and
  acceptor in [130, 180] degrees; halogen bonds: acceptor to halogen <= 3.5 A, angle at the halogen
  (donor, acceptor) in [130, 180], angle at the acceptor (halogen, the acceptor's bonded atom) in
  [80, 140]; pi stacking between aromatic ring matches: centroid distance (5.5 A face-to-face, 6.5 A
  edge-to-face), angle between the ring normals ([0, 35], [50, 90] degrees) and between a normal and the
  centroid-centroid axis ([0, 33], [0, 30]) for either ring, angles to normals folded into [0, 90];
  edge-to-face also needs the line where the ring planes meet to pass within 1.5 A of a centroid.
- Arithmetic. Limits are decided on the float64 values RDKit's ``Point3D`` produces: the same operations
  in the same order (an angle is the dot product over the square root of the product of squared lengths,
  clipped to [-1, 1], through the C library's ``acos``; see contact_geometry.py). Two steps use cheaper
  arithmetic than ProLIF's (the 6 A residue search, numpy distances instead of the pocket's KD-tree; the
  plane intersection, a closed form instead of a LAPACK solve); there a value within ``DECISION_MARGIN``
  of its limit is decided again with ProLIF's arithmetic.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Callable, Iterable, Optional

import numpy as np
from rdkit import Chem
from scipy.spatial import cKDTree

from pecan.convert import contact_geometry as geo
from pecan.convert.interactions import INTERACTION_MAP, _prolif, prolif_molecule

TOPOLOGY_CACHE_SIZE = 8
POSES_PER_BATCH = 32  # bounds the [poses, ligand matches, receptor matches] temporaries
INTERACTIONS = [name for names in INTERACTION_MAP.values() for name in names]


# ---------------------------------------------------------------------------- rules


@dataclass(frozen=True)
class Rules:
    """Patterns and limits of the counted interactions, read from ProLIF's interaction objects."""

    patterns: dict  # group name -> RDKit SMARTS query
    hydrophobic: float
    ionic: float
    hbond: float
    hbond_angle: tuple
    xbond: float
    xbond_angles: tuple  # (at the halogen: acceptor-halogen-donor, at the acceptor: halogen-acceptor-neighbour)
    stacking: dict  # "FaceToFace"/"EdgeToFace" -> (distance, plane angle, normal-to-axis angle, radius or None)
    vicinity: float

    @classmethod
    def from_prolif(cls, fingerprint) -> "Rules":
        """The parameters of a ``prolif.Fingerprint`` holding the counted interactions."""
        fp = fingerprint
        ftf, etf = fp.pistacking.ftf, fp.pistacking.etf
        patterns = {
            "hydrophobic": fp.hydrophobic.lig_pattern,
            "hbond_acceptor": fp.hbacceptor.lig_pattern,
            "hbond_donor": fp.hbacceptor.prot_pattern,
            "xbond_acceptor": fp.xbacceptor.lig_pattern,
            "xbond_donor": fp.xbacceptor.prot_pattern,
            "cation": fp.cationic.lig_pattern,
            "anion": fp.cationic.prot_pattern,
            **{f"ring{k}": ring for k, ring in enumerate(ftf.pi_ring)},
        }
        _check_inverted_alike(fp, patterns)
        return cls(
            patterns=patterns,
            hydrophobic=fp.hydrophobic.distance,
            ionic=fp.cationic.distance,
            hbond=fp.hbacceptor.distance,
            hbond_angle=fp.hbacceptor.angle,
            xbond=fp.xbacceptor.distance,
            xbond_angles=(fp.xbacceptor.L1P2P1_angle, fp.xbacceptor.L2L1P2_angle),
            stacking={
                "FaceToFace": (ftf.distance, ftf.plane_angle, ftf.normal_to_centroid_angle, None),
                "EdgeToFace": (etf.distance, etf.plane_angle, etf.normal_to_centroid_angle, etf.intersect_radius),
            },
            vicinity=fp.vicinity_cutoff,
        )


def _check_inverted_alike(fp, patterns: dict) -> None:
    """HBDonor, XBDonor, Anionic and EdgeToFace must hold the patterns and limits read from their partners."""

    def smarts(mols) -> list[str]:
        return [Chem.MolToSmarts(m) for m in mols]

    pairs = [
        (fp.hbdonor.lig_pattern, patterns["hbond_acceptor"]),
        (fp.hbdonor.prot_pattern, patterns["hbond_donor"]),
        (fp.xbdonor.lig_pattern, patterns["xbond_acceptor"]),
        (fp.xbdonor.prot_pattern, patterns["xbond_donor"]),
        (fp.anionic.lig_pattern, patterns["cation"]),
        (fp.anionic.prot_pattern, patterns["anion"]),
    ]
    alike = all(a == b for a, b in (smarts(pair) for pair in pairs))
    alike &= smarts(fp.pistacking.etf.pi_ring) == smarts(fp.pistacking.ftf.pi_ring)
    alike &= (fp.hbdonor.distance, fp.hbdonor.angle) == (fp.hbacceptor.distance, fp.hbacceptor.angle)
    alike &= (fp.xbdonor.distance, fp.xbdonor.L1P2P1_angle, fp.xbdonor.L2L1P2_angle) == (
        fp.xbacceptor.distance,
        fp.xbacceptor.L1P2P1_angle,
        fp.xbacceptor.L2L1P2_angle,
    )
    alike &= fp.anionic.distance == fp.cationic.distance
    if not alike:
        raise ValueError("ProLIF's inverted interactions differ from their partners: ContactCounter cannot follow")


# ---------------------------------------------------------------------------- matches on residue fragments


def parent_indices(residue) -> np.ndarray:
    """Index in the parent molecule of each atom of a ProLIF residue fragment."""
    return np.array([a.GetUnsignedProp("mapindex") for a in residue.GetAtoms()], dtype=np.int64)


def residue_matches(residue, patterns: dict) -> dict[str, np.ndarray]:
    """{group: [m, k] atom indices within the fragment} of each pattern on one ProLIF residue fragment."""
    found = {}
    for name, pattern in patterns.items():
        matches = residue.GetSubstructMatches(pattern)
        found[name] = np.array(matches, dtype=np.int64).reshape(len(matches), pattern.GetNumAtoms())
    return found


@dataclass
class Pocket:
    """The pocket as ProLIF sees it: its KD-tree, residue slots and every group's matched coordinates."""

    tree: object
    xyz: np.ndarray  # [n_atoms, 3] the coordinates the tree holds
    atom_residue: np.ndarray  # [n_atoms] residue slot of each atom
    residue_atoms: list  # per residue slot: its atom indices
    slots: dict  # ResidueId -> residue slot
    groups: dict  # group -> ([m, k, 3] coordinates, [m] residue slot); rings: ([m, 3] centroid, normal, slot)

    @classmethod
    def build(cls, protein, patterns: dict) -> "Pocket":
        """Match every pattern on each residue fragment of a ``prolif.Molecule``."""
        plf = _prolif()
        slots = {resid: k for k, resid in enumerate(protein.residues.keys())}
        atom_residue = np.array([slots[plf.ResidueId.from_atom(a)] for a in protein.GetAtoms()], dtype=np.int64)
        parts: dict = {name: [] for name in [*patterns, "rings"]}
        for slot, residue in enumerate(protein.residues.values()):
            xyz = residue.xyz  # the coordinates ProLIF measures on
            for name, index in residue_matches(residue, patterns).items():
                if len(index):
                    parts["rings" if name.startswith("ring") else name].append((xyz[index], np.full(len(index), slot)))
        groups = {}
        for name, found in parts.items():
            width = 6 if name == "rings" else patterns[name].GetNumAtoms()
            coords = [c for c, _ in found] or [np.zeros((0, width, 3))]
            residue_slot = np.concatenate([s for _, s in found] or [np.zeros(0, dtype=np.int64)])
            if name == "rings":  # rings of different sizes: keep their frames only
                frames = [geo.ring_frames(c) for c in coords]
                groups[name] = (np.concatenate([f[0] for f in frames]), np.concatenate([f[1] for f in frames]))
                groups[name] += (residue_slot,)
            else:
                groups[name] = (np.concatenate(coords), residue_slot)
        xyz = protein.xyz
        residue_atoms = [np.nonzero(atom_residue == slot)[0] for slot in range(len(slots))]
        return cls(cKDTree(xyz), xyz, atom_residue, residue_atoms, slots, groups)


@dataclass
class LigandResidue:
    """One residue fragment of a ligand topology: its atoms and each group's matches (pose atom indices)."""

    resid: object
    atoms: np.ndarray
    groups: dict  # group -> [m, k] atom indices; "rings": list of [m, n] per ring size


def ligand_residues(pose, patterns: dict) -> list[LigandResidue]:
    """The residue fragments ProLIF makes of a pose, with their matches (once per topology)."""
    ligand = prolif_molecule(pose, "this pose")
    residues = []
    for resid, residue in ligand.residues.items():
        atoms = parent_indices(residue)
        groups = {name: atoms[index] for name, index in residue_matches(residue, patterns).items()}
        groups["rings"] = [groups.pop(name) for name in list(groups) if name.startswith("ring")]
        groups["rings"] = [m for m in groups["rings"] if len(m)]
        residues.append(LigandResidue(resid, atoms, groups))
    return residues


def topology_signature(mol) -> bytes:
    """What the matches and the residue split depend on, without coordinates: RDKit's binary form of the
    molecule without conformers or properties (atoms with charges, hydrogens, aromaticity, hybridisation
    and PDB residue info; bonds with their types)."""
    return Chem.Mol(mol, True).ToBinary()


@dataclass(frozen=True)
class PairRule:
    """One interaction between ligand and receptor matches: which groups, the anchor atoms whose distance is
    limited, and the angle test of the pairs within it (``geometry(ligand atoms, receptor atoms)`` -> mask)."""

    name: str
    ligand_group: str
    ligand_anchor: int
    receptor_group: str
    receptor_anchor: int
    limit: float
    geometry: Optional[Callable] = None


def pair_rules(rules: Rules) -> list[PairRule]:
    """Every interaction but stacking, in ProLIF's roles (for the inverted ones the ligand is the donor)."""

    def hbond(acceptor, donor):
        return lambda lig, rec: geo.hbond_geometry(*acceptor(lig, rec), *donor(lig, rec), rules.hbond_angle)

    def xbond(acceptor, donor):
        return lambda lig, rec: geo.xbond_geometry(*acceptor(lig, rec), *donor(lig, rec), *rules.xbond_angles)

    def ligand(lig, rec):
        return lig

    def receptor(lig, rec):
        return rec

    short = max(rules.hydrophobic, rules.ionic, rules.hbond, rules.xbond)
    if short >= rules.vicinity:  # the residue search is skipped for these rules only because of this
        raise ValueError(f"a distance limit of {short} A reaches the vicinity cutoff of {rules.vicinity} A")
    return [
        PairRule("Hydrophobic", "hydrophobic", 0, "hydrophobic", 0, rules.hydrophobic),
        PairRule("Cationic", "cation", 0, "anion", 0, rules.ionic),
        PairRule("Anionic", "anion", 0, "cation", 0, rules.ionic),
        PairRule("HBAcceptor", "hbond_acceptor", 0, "hbond_donor", 0, rules.hbond, hbond(ligand, receptor)),
        PairRule("HBDonor", "hbond_donor", 0, "hbond_acceptor", 0, rules.hbond, hbond(receptor, ligand)),
        PairRule("XBAcceptor", "xbond_acceptor", 0, "xbond_donor", 1, rules.xbond, xbond(ligand, receptor)),
        PairRule("XBDonor", "xbond_donor", 1, "xbond_acceptor", 0, rules.xbond, xbond(receptor, ligand)),
    ]


# ---------------------------------------------------------------------------- the counter


class ContactCounter:
    """``InteractionCounter``'s five counts with numpy: the same receptor pocket in, the same counts out."""

    def __init__(self, receptor) -> None:
        plf = _prolif()
        self.rules = Rules.from_prolif(plf.Fingerprint(INTERACTIONS, count=True))
        protein = prolif_molecule(receptor, "the receptor pocket")
        self.pocket = Pocket.build(protein, self.rules.patterns)
        self._pair_rules = pair_rules(self.rules)
        self._topologies: OrderedDict = OrderedDict()

    def counts(self, pose) -> dict[str, float]:
        """{attribute: count} for one pose (an RDKit molecule with hydrogens and 3-D coordinates)."""
        return self.counts_many([pose])[0]

    def counts_many(self, poses: Iterable, signatures: Optional[list[bytes]] = None) -> list[dict[str, float]]:
        """``counts`` of each pose; poses of one topology (in any order) are counted together. ``signatures``:
        each pose's ``topology_signature`` when the caller has it already."""
        poses = list(poses)
        if signatures is None:
            signatures = [topology_signature(pose) for pose in poses]
        by_topology: dict = {}
        for k, signature in enumerate(signatures):
            by_topology.setdefault(signature, []).append(k)
        results: list = [None] * len(poses)
        for signature, members in by_topology.items():
            coords = [poses[k].GetConformer().GetPositions() for k in members]
            for k, found in zip(members, self._counts_for_topology(signature, poses[members[0]], coords)):
                results[k] = found
        return results

    def counts_for_coords(self, template, coords: Iterable[np.ndarray]) -> list[dict[str, float]]:
        """Counts of ``template`` (its topology and atom order) placed at each [n_atoms, 3] coordinate set."""
        coords = [np.asarray(xyz, dtype=np.float64) for xyz in coords]
        return self._counts_for_topology(topology_signature(template), template, coords)

    def _counts_for_topology(self, signature: bytes, template, coords: list) -> list[dict[str, float]]:
        residues = self._topology(signature, template)
        results = []
        for start in range(0, len(coords), POSES_PER_BATCH):
            xyz = np.stack(coords[start : start + POSES_PER_BATCH])
            per_type = {name: np.zeros(len(xyz), dtype=np.int64) for name in INTERACTIONS}
            for residue in residues:
                for name, found in self._residue_counts(residue, xyz).items():
                    per_type[name] += found
            results += [
                {attr: float(sum(per_type[name][p] for name in names)) for attr, names in INTERACTION_MAP.items()}
                for p in range(len(xyz))
            ]
        return results

    def _topology(self, signature: bytes, template) -> list[LigandResidue]:
        residues = self._topologies.get(signature)
        if residues is None:
            residues = ligand_residues(template, self.rules.patterns)
            self._topologies[signature] = residues
            if len(self._topologies) > TOPOLOGY_CACHE_SIZE:
                self._topologies.popitem(last=False)
        self._topologies.move_to_end(signature)
        return residues

    def near(self, points: np.ndarray, pose: np.ndarray, slot: np.ndarray) -> np.ndarray:
        """For (pose, residue slot) pairs: whether the residue has an atom within the vicinity cutoff of one of
        the pose's ``points`` [poses, atoms, 3], as ProLIF's KD-tree query of the pocket decides."""
        cutoff, found = self.rules.vicinity, np.zeros(len(pose), dtype=bool)
        exact: dict = {}
        for k, (p, s) in enumerate(zip(pose.tolist(), slot.tolist())):
            atoms = self.pocket.xyz[self.pocket.residue_atoms[s]]
            nearest = geo.length(points[p][:, None, :] - atoms[None, :, :]).min()
            if abs(nearest - cutoff) > geo.DECISION_MARGIN:
                found[k] = nearest <= cutoff
                continue
            if p not in exact:  # on the cutoff: the pocket tree's own query decides
                hits = self.pocket.tree.query_ball_point(points[p], cutoff)
                exact[p] = set(self.pocket.atom_residue[[i for hit in hits for i in hit]].tolist())
            found[k] = s in exact[p]
        return found

    def _residue_counts(self, residue: LigandResidue, xyz: np.ndarray) -> dict[str, np.ndarray]:
        """Per-pose counts of each interaction between one ligand residue and the pocket.

        ProLIF pairs a ligand residue only with receptor residues within the vicinity cutoff (6 A) of it.
        Every rule but stacking needs two atoms closer than that, so only stacked ring pairs are checked.
        """
        poses = len(xyz)
        allowed = np.ones(len(self.pocket.slots), dtype=bool)
        itself = self.pocket.slots.get(residue.resid)
        if itself is not None:
            allowed[itself] = False  # ProLIF skips a residue paired with itself
        tally = {name: np.zeros(poses, dtype=np.int64) for name in INTERACTIONS}

        for rule in self._pair_rules:
            lig_atoms = residue.groups[rule.ligand_group]
            rec_coords, rec_slot = self.pocket.groups[rule.receptor_group]
            if not len(lig_atoms) or not len(rec_coords):
                continue
            ligand = xyz[:, lig_atoms[:, rule.ligand_anchor]]
            reach = geo.in_reach(rec_coords[:, rule.receptor_anchor], ligand, rule.limit)
            rec_coords = rec_coords[allowed[rec_slot] & reach]
            p, i, j = geo.pairs_within(ligand, rec_coords[:, rule.receptor_anchor], rule.limit)
            if len(p) and rule.geometry is not None:
                lig_points = [xyz[p, lig_atoms[i, c]] for c in range(lig_atoms.shape[1])]
                p = p[rule.geometry(lig_points, [rec_coords[j, c] for c in range(rec_coords.shape[1])])]
            tally[rule.name] += np.bincount(p, minlength=poses)
        tally["PiStacking"] += self._stacking(residue, xyz, allowed)
        return tally

    def _stacking(self, residue: LigandResidue, xyz: np.ndarray, allowed: np.ndarray) -> np.ndarray:
        """Per-pose count of stacked ring pairs, face-to-face and edge-to-face counted separately."""
        counted = np.zeros(len(xyz), dtype=np.int64)
        if not residue.groups["rings"]:
            return counted
        frames = [geo.ring_frames(xyz[:, atoms]) for atoms in residue.groups["rings"]]  # [poses, rings, 3] each
        lig_centroids = np.concatenate([f[0] for f in frames], axis=1)
        lig_normals = np.concatenate([f[1] for f in frames], axis=1)
        widest = max(rule[0] for rule in self.rules.stacking.values())
        centroids, normals, ring_slot = self.pocket.groups["rings"]
        keep = allowed[ring_slot] & geo.in_reach(centroids, lig_centroids, widest)
        centroids, normals, ring_slot = centroids[keep], normals[keep], ring_slot[keep]
        p, i, j = geo.pairs_within(lig_centroids, centroids, widest)
        if not len(p):
            return counted
        pose_slot, inverse = np.unique(np.stack([p, ring_slot[j]], axis=1), axis=0, return_inverse=True)
        near = self.near(xyz[:, residue.atoms], pose_slot[:, 0], pose_slot[:, 1])[inverse.reshape(-1)]
        p, i, j = p[near], i[near], j[near]
        lc, ln, rc, rn = lig_centroids[p, i], lig_normals[p, i], centroids[j], normals[j]
        distance = geo.length(lc - rc)  # the values pairs_within compared
        for rule in self.rules.stacking.values():
            within = distance <= rule[0]
            keep = np.zeros(len(p), dtype=bool)
            if within.any():
                keep[within] = geo.stacking_geometry(lc[within], ln[within], rc[within], rn[within], rule)
            counted += np.bincount(p[keep], minlength=len(xyz))
        return counted
