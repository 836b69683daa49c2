"""The converter's featurisation of a ligand's poses, at screening speed: the same arrays as
``pecan.convert.complexes.convert_complex`` (``tests/scoring/test_featurise.py`` compares them value for value),
with the work that does not change between poses done once.

- **Receptor, once per file**: parsed (``chemistry.read_receptor``), its coordinates and each atom's residue
  kept as arrays (``PreparedReceptor``).
- **Pocket, once per residue set**: the converter cuts the whole residues within ``pocket_radius`` of any of
  the complex's ligands (``chemistry.pocket_submol``) and featurises that molecule. Here the residues are
  found with array operations, and the cut pocket, its atom rows, radii and interaction-counter setup are
  kept per distinct residue set (``PocketCache``): ligands docked into one site mostly share one.
- **Ligand features, once per topology**: a pose's 19 feature columns and radii depend on its molecular graph
  only, so poses of one ligand reuse the first pose's rows with their own coordinates (``LigandRows``); a
  record with a different graph is featurised afresh.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

import numpy as np

from pecan.convert import chemistry as chem
from pecan.convert.chemistry import ConversionError
from pecan.convert.complexes import ConvertedComplex, Options, Sample, pose_ids, with_hydrogens
from pecan.data import layout

# Distances this close to the pocket radius are recomputed exactly as the converter computes them.
BORDER = 1e-3
# Point-atom pairs up to which nearest distances come from one matrix product rather than a KD-tree.
BRUTE_FORCE_PAIRS = 100_000


@dataclass
class PreparedReceptor:
    """A receptor read once: the molecule, its coordinates (float64) and a residue number per atom."""

    path: Path
    mol: object
    positions: np.ndarray
    residue: np.ndarray  # int64 [n]: atoms of one residue (chain, number, insertion code) share the number

    @classmethod
    def read(cls, path: Path, drop_hetero: bool = False) -> "PreparedReceptor":
        """Parse ``path`` as the converter does (waters dropped)."""
        mol = chem.read_receptor(path, drop_hetero)
        codes: dict = {}
        residue = np.empty(mol.GetNumAtoms(), dtype=np.int64)
        for atom in mol.GetAtoms():
            info = atom.GetPDBResidueInfo()
            key = (
                ("", atom.GetIdx(), "")
                if info is None
                else (info.GetChainId(), info.GetResidueNumber(), info.GetInsertionCode())
            )
            residue[atom.GetIdx()] = codes.setdefault(key, len(codes))
        return cls(path, mol, mol.GetConformer().GetPositions(), residue)

    def pocket_residues(self, ligands: list[np.ndarray], radius: float) -> tuple[int, ...]:
        """Residue numbers with an atom within ``radius`` of any ligand atom: the residues
        ``chemistry.pocket_submol`` keeps, decided by the same float64 distances."""
        if not ligands:
            return ()
        near = near_atoms(self.positions, np.concatenate(ligands), radius)
        return tuple(np.unique(self.residue[near]).tolist())

    def cut(self, residues: tuple[int, ...]):
        """The pocket molecule of ``residues``, as ``chemistry.pocket_submol`` builds it (atoms removed from
        the receptor, then sanitised), with the removals done in one batch."""
        keep = np.isin(self.residue, np.asarray(residues, dtype=np.int64))
        editable = chem.Chem.RWMol(self.mol)
        editable.BeginBatchEdit()
        for index in np.flatnonzero(~keep).tolist():
            editable.RemoveAtom(index)
        editable.CommitBatchEdit()
        return chem._sanitize_leniently(editable.GetMol())


def near_atoms(points: np.ndarray, ligand: np.ndarray, radius: float) -> np.ndarray:
    """Mask of ``points`` within ``radius`` of any ``ligand`` atom, as ``chemistry._min_distances`` decides it:
    a bounding-box filter, each candidate's nearest ligand atom (float64 distances), and the converter's own
    formula for the points whose distance lies within ``BORDER`` of the radius."""
    low, high = ligand.min(0) - radius - BORDER, ligand.max(0) + radius + BORDER
    candidates = np.flatnonzero(((points >= low) & (points <= high)).all(1))
    near = np.zeros(len(points), dtype=bool)
    if len(candidates) == 0:
        return near
    pts = points[candidates]
    best = nearest_distances(pts, ligand, radius + 2 * BORDER)
    border = np.abs(best - radius) <= BORDER
    decided = best <= radius
    if border.any():
        decided[border] = chem._min_distances(pts[border], [ligand]) <= radius
    near[candidates] = decided
    return near


def nearest_distances(points: np.ndarray, ligand: np.ndarray, bound: float) -> np.ndarray:
    """Each point's distance to its nearest ``ligand`` atom (inf beyond ``bound``). One pose's pocket (a few
    hundred points, tens of atoms) in one matrix product, |p|^2 + |l|^2 - 2 p.l: its rounding (~1e-12 A at
    these coordinates) is far inside ``BORDER``, so the decisions are those of exact distances. A KD-tree
    (scipy) for larger sets, such as a receptor against all poses of a ligand."""
    if len(points) * len(ligand) > BRUTE_FORCE_PAIRS:
        from scipy.spatial import cKDTree

        return cKDTree(ligand).query(points, distance_upper_bound=bound)[0]
    squared = np.einsum("ij,ij->i", points, points)[:, None] - 2.0 * (points @ ligand.T)
    squared += np.einsum("ij,ij->i", ligand, ligand)[None, :]
    best = np.sqrt(np.maximum(squared.min(1), 0.0))
    best[best > bound] = np.inf
    return best


@dataclass
class Pocket:
    """One cut pocket: its atom rows and radii (the converter's) and the interaction counter set up on it."""

    atoms: np.ndarray
    vdw: np.ndarray
    counter: object
    xyz: np.ndarray = field(init=False)  # the rows' coordinates as float64, as pocket_rows compares them

    def __post_init__(self) -> None:
        self.xyz = self.atoms[:, :3].astype(np.float64)


class PocketCache:
    """Pockets by (receptor, residue set), the most recent ``size`` kept; ``counter_factory(pocket_mol)``
    makes the interaction counter (``pecan.convert.interactions.InteractionCounter`` or an equal one)."""

    def __init__(self, counter_factory: Callable, size: int = 32) -> None:
        self.counter_factory, self.size = counter_factory, size
        self._pockets: OrderedDict = OrderedDict()
        self.hits = self.misses = 0

    def get(self, receptor: PreparedReceptor, residues: tuple[int, ...]) -> Pocket:
        """The pocket of ``residues`` of ``receptor``, cut and featurised on first use."""
        key = (str(receptor.path), residues)
        pocket = self._pockets.get(key)
        if pocket is not None:
            self.hits += 1
            self._pockets.move_to_end(key)
            return pocket
        self.misses += 1
        mol = receptor.cut(residues)
        if mol.GetNumHeavyAtoms() == 0:
            pocket = None
        else:
            pocket = Pocket(chem.atom_features(mol, -1.0), chem.van_der_waals(mol), self.counter_factory(mol))
        self._pockets[key] = pocket
        if len(self._pockets) > self.size:
            self._pockets.popitem(last=False)
        return pocket


def topology(mol) -> bytes:
    """What a pose's feature columns depend on, without its coordinates: RDKit's binary form of the molecule
    without conformers or properties (atoms with their element, charge, hydrogens, aromaticity and
    hybridisation; bonds with their types), the interaction counter's topology key too."""
    from pecan.convert.contacts import topology_signature

    return topology_signature(mol)


@dataclass
class LigandRows:
    """Feature rows and radii of one ligand topology; ``rows(positions)`` gives a pose's rows."""

    key: bytes
    template: np.ndarray
    vdw: np.ndarray
    heavy: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    has_hydrogens: bool = True

    @classmethod
    def of(cls, mol, key: bytes) -> "LigandRows":
        """Featurise ``mol`` (``chemistry.atom_features``, molcode +1)."""
        numbers = np.array([a.GetAtomicNum() for a in mol.GetAtoms()], dtype=np.int64)
        heavy = np.flatnonzero(numbers > 1)
        return cls(key, chem.atom_features(mol, 1.0), chem.van_der_waals(mol), heavy, bool((numbers == 1).any()))

    def rows(self, heavy_positions: np.ndarray) -> np.ndarray:
        """The rows of a pose of this topology: the template with the pose's heavy-atom coordinates."""
        rows = self.template.copy()
        rows[:, 0:3] = heavy_positions
        return rows


class LigandFeaturiser:
    """Ligand rows per pose, featurising only the first pose of each topology (the last one kept)."""

    def __init__(self) -> None:
        self.current: Optional[LigandRows] = None
        self.featurised = self.reused = 0

    def topology(self, mol) -> LigandRows:
        """The featurised topology of ``mol`` (featurised now when it differs from the last one)."""
        key = topology(mol)
        if self.current is None or self.current.key != key:
            self.current = LigandRows.of(mol, key)
            self.featurised += 1
        else:
            self.reused += 1
        return self.current


def heavy_positions(mol, ligand: LigandRows) -> np.ndarray:
    """``chemistry.heavy_positions(mol)`` (float64) through the topology's heavy-atom index."""
    return mol.GetConformer().GetPositions()[ligand.heavy]


@dataclass(frozen=True)
class LigandGroup:
    """One ligand's poses to score together (ranked among themselves): a complex of the converter."""

    complex_id: str
    receptor: Path
    source: str  # the poses file (for messages and the failures file)
    records: list  # RDKit molecules, None for a record RDKit could not parse
    crystal: Optional[Path] = None
    score_property: str = ""
    affinity: float = float("nan")
    error: str = ""  # why the poses file could not be read ('' when it could)
    seq: int = 0  # the group's number in the input order (ranks share the groups by it)
    texts: Optional[list] = None  # each record's SDF text (bytes), None for one read from mol2 or PDB


class GroupConverter:
    """Converts ligand groups as ``convert_complex`` converts manifest rows, sharing receptors, pockets and
    ligand features between them."""

    def __init__(
        self,
        options: Options,
        counter_factory: Optional[Callable] = None,
        pocket_cache: int = 32,
        receptor_reader: Optional[Callable] = None,
    ) -> None:
        if counter_factory is None:
            from pecan.convert.interactions import InteractionCounter as counter_factory
        self.options = options
        self.read_receptor = receptor_reader or PreparedReceptor.read  # (path, drop_hetero) -> PreparedReceptor
        self.pockets = PocketCache(counter_factory, pocket_cache)
        self.ligands = LigandFeaturiser()
        self._receptors: OrderedDict = OrderedDict()
        self._crystals: dict = {}

    def receptor(self, path: Path) -> PreparedReceptor:
        """The prepared receptor of ``path`` (the last 4 kept), read by ``receptor_reader`` (`pecan score`'s
        adds hydrogens to a receptor without them: ``pecan.scoring.receptors``)."""
        key = str(path)
        if key not in self._receptors:
            if not path.exists():
                raise ConversionError(f"receptor {path}: file not found")
            self._receptors[key] = self.read_receptor(path, self.options.drop_hetero)
            if len(self._receptors) > 4:
                self._receptors.popitem(last=False)
        return self._receptors[key]

    def crystal(self, path: Optional[Path]):
        """The crystal ligand's first record (parsed once per file), None without one."""
        if path is None:
            return None
        key = str(path)
        if key not in self._crystals:
            mols = chem.read_ligands(path)
            problem = chem.ligand_problem(mols[0] if mols else None)
            if problem:
                raise ConversionError(f"crystal ligand {path}: {problem}")
            self._crystals[key] = mols[0]
        return self._crystals[key]

    def convert(self, group: LigandGroup) -> ConvertedComplex:
        """The group's samples and failures, equal to ``convert_complex`` of a manifest row with these files."""
        result = ConvertedComplex(group.complex_id, group.affinity)
        try:
            self._convert(group, result)
        except ConversionError as err:
            result.failures.append({"complex_id": group.complex_id, "pose_id": "", "reason": str(err)})
            result.poses = []
        except Exception as err:  # a parser bug on odd input must not stop the screen
            reason = f"unexpected {type(err).__name__}: {err}"
            result.failures.append({"complex_id": group.complex_id, "pose_id": "", "reason": reason})
            result.poses = []
        return result

    def _convert(self, group: LigandGroup, result: ConvertedComplex) -> None:
        radius = self.options.pocket_radius
        receptor = self.receptor(group.receptor)
        crystal = self.crystal(group.crystal)
        if group.error:
            raise ConversionError(group.error)
        if not group.records:
            raise ConversionError(f"poses {group.source}: no records")
        poses = [m for m in group.records if not chem.ligand_problem(m)]
        if not poses:  # say why each record failed, not that no receptor atom is near no ligand
            for pose_id, mol in zip(pose_ids(group.complex_id, group.records), group.records):
                reason = f"{group.source}: {chem.ligand_problem(mol)}"
                result.failures.append({"complex_id": group.complex_id, "pose_id": pose_id, "reason": reason})
            raise ConversionError("no pose could be converted (see the pose rows)")
        kinds = [self.ligands.topology(m) for m in poses]
        positions = [heavy_positions(m, kind) for m, kind in zip(poses, kinds)]
        ligands = ([chem.heavy_positions(crystal)] if crystal is not None else []) + positions
        pocket = self.pockets.get(receptor, receptor.pocket_residues(ligands, radius))
        prepared = {id(m): (kind, xyz) for m, kind, xyz in zip(poses, kinds, positions)}
        if pocket is None:
            raise ConversionError(f"no receptor atoms within {radius} A of any ligand")
        if crystal is not None:
            rows = chem.atom_features(crystal, 1.0)
            if len(chem.pocket_rows(pocket.atoms, pocket.vdw, rows[:, :3].astype(np.float64), radius)[0]) == 0:
                raise ConversionError(f"no receptor atoms within {radius} A of the crystal ligand")
        ready = []
        for pose_id, mol in zip(pose_ids(group.complex_id, group.records), group.records):
            try:
                problem = chem.ligand_problem(mol)
                if problem:
                    raise ConversionError(f"{group.source}: {problem}")
                # a docking score that is not a number fails this pose (pecan.runtime.numbers)
                chem.docking_score(mol, group.score_property, group.source)
                rmsd = chem.symmetric_rmsd(mol, crystal) if crystal is not None else float("nan")
                ready.append((pose_id, mol, rmsd, *self._rows(*prepared[id(mol)], pocket)))
            except ConversionError as err:
                result.failures.append({"complex_id": group.complex_id, "pose_id": pose_id, "reason": str(err)})
        kinds_of = [prepared[id(r[1])][0] for r in ready]
        for (pose_id, mol, rmsd, *rows), counts in zip(
            ready, self.interaction_counts(pocket, [r[1] for r in ready], kinds_of)
        ):
            result.poses.append(self._sample(group, mol, pose_id, rmsd, rows, counts))
        if not result.poses:
            raise ConversionError("no pose could be converted (see the pose rows)")

    def _rows(self, kind: LigandRows, positions: np.ndarray, pocket: Pocket) -> tuple:
        """A pose's ligand rows and radii, and the pocket rows and radii within reach of it (those
        ``chemistry.pocket_rows`` keeps, decided by ``near_atoms``)."""
        radius = self.options.pocket_radius
        ligand, ligand_vdw = kind.rows(positions), kind.vdw
        keep = near_atoms(pocket.xyz, ligand[:, :3].astype(np.float64), radius)
        protein, protein_vdw = pocket.atoms[keep], pocket.vdw[keep]
        if len(protein) == 0:
            raise ConversionError(f"no receptor atoms within {radius} A of this pose")
        return ligand, ligand_vdw, protein, protein_vdw

    @staticmethod
    def interaction_counts(pocket: Pocket, mols: list, kinds: list) -> list[dict]:
        """The interaction counts of the poses (with hydrogens added where a pose's topology has none), counted
        together with their topology signatures."""
        poses = [mol if kind.has_hydrogens else with_hydrogens(mol) for mol, kind in zip(mols, kinds)]
        signatures = [kind.key if kind.has_hydrogens else topology(pose) for pose, kind in zip(poses, kinds)]
        return pocket.counter.counts_many(poses, signatures)

    def _sample(self, group: LigandGroup, mol, pose_id: str, rmsd: float, rows: list, counts: dict) -> Sample:
        ligand, ligand_vdw, protein, protein_vdw = rows
        attrs = {"rmsd": float(rmsd), "score": chem.docking_score(mol, group.score_property)}
        if not np.isnan(rmsd):
            attrs["label"] = int(rmsd < self.options.rmsd_threshold)
        attrs.update(counts)
        return Sample(
            pose_id or layout.DEFAULT_CRYSTAL_GROUP.rpartition("/")[2],
            np.concatenate([ligand, protein]).astype(np.float32),
            np.concatenate([ligand_vdw, protein_vdw]).astype(np.float32),
            attrs,
        )
