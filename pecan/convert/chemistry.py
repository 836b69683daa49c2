"""Molecules in, shard rows out: RDKit parsing, the 19 per-atom features, pockets and heavy-atom RMSD."""

from __future__ import annotations

import os
import re
from collections import Counter
from functools import lru_cache
from pathlib import Path
from typing import Optional

import numpy as np

from pecan.data import layout

try:
    from rdkit import Chem, RDConfig, RDLogger
    from rdkit.Chem import ChemicalFeatures, rdMolAlign, rdPartialCharges
except ImportError as err:  # pragma: no cover - exercised only without the extra
    raise ImportError("structure conversion needs RDKit and ProLIF: pip install -e '.[convert]'") from err

RDLogger.DisableLog("rdApp.*")


from pecan.runtime.errors import ConversionError, NotANumber  # noqa: E402,F401  (ConversionError re-exported)
from pecan.runtime.numbers import read_docking_score  # noqa: E402

WATER_RESIDUES = {"HOH", "WAT", "DOD", "H2O", "TIP", "TIP3", "SOL"}
ELEMENT_SLOTS = {5: 0, 6: 1, 7: 2, 8: 3, 15: 4, 16: 5, 34: 6, 9: 7, 17: 7, 35: 7, 53: 7}
METAL_SLOT = 8
NON_METALS = {1, 2, 5, 6, 7, 8, 9, 10, 14, 15, 16, 17, 18, 33, 34, 35, 36, 52, 53, 54, 85, 86}
HYBRIDISATION = {"SP": 1, "SP2": 2, "SP3": 3, "SP3D": 5, "SP3D2": 6}
# Column 17 keeps the meaning FAST's featuriser gave it: carbon not bonded to N, O or F.
HYDROPHOBIC_SMARTS = Chem.MolFromSmarts("[#6+0!$(*~[#7,#8,#9])]")


@lru_cache(maxsize=1)
def feature_factory():
    """RDKit's base feature definitions (Donor and Acceptor families are used)."""
    return ChemicalFeatures.BuildFeatureFactory(os.path.join(RDConfig.RDDataDir, "BaseFeatures.fdef"))


@lru_cache(maxsize=None)
def family_patterns(family: str) -> tuple[Chem.Mol, ...]:
    """The compiled SMARTS of every definition of ``family`` in RDKit's base feature definitions."""
    definitions = feature_factory().GetFeatureDefs()
    return tuple(Chem.MolFromSmarts(smarts) for name, smarts in definitions.items() if name.split(".")[0] == family)


# ---------------------------------------------------------------------------- reading files


def _sanitize_leniently(mol: Chem.Mol) -> Chem.Mol:
    """Full sanitisation, or everything except the valence check (receptor PDBs often have odd valences)."""
    try:
        Chem.SanitizeMol(mol)
    except Exception:  # RDKit raises several sanitisation exception types
        mol.UpdatePropertyCache(strict=False)
        ops = Chem.SanitizeFlags.SANITIZE_ALL ^ Chem.SanitizeFlags.SANITIZE_PROPERTIES
        Chem.SanitizeMol(mol, ops, catchErrors=True)
    return mol


def read_receptor(path: Path, drop_hetero: bool = False) -> Chem.Mol:
    """Receptor from PDB without waters (and without HETATM residues when ``drop_hetero``)."""
    mol = Chem.MolFromPDBFile(str(path), removeHs=False, sanitize=False, proximityBonding=True)
    if mol is None or mol.GetNumAtoms() == 0:
        raise ConversionError(f"receptor {path}: RDKit cannot parse it as PDB")
    editable = Chem.RWMol(mol)
    for atom in reversed(list(mol.GetAtoms())):
        info = atom.GetPDBResidueInfo()
        name = info.GetResidueName().strip() if info else ""
        if name in WATER_RESIDUES or (drop_hetero and info is not None and info.GetIsHeteroAtom()):
            editable.RemoveAtom(atom.GetIdx())
    receptor = _sanitize_leniently(editable.GetMol())
    if receptor.GetNumHeavyAtoms() == 0:
        raise ConversionError(f"receptor {path}: no heavy atoms left after dropping waters")
    return receptor


def read_ligands(path: Path) -> list[Optional[Chem.Mol]]:
    """Every record of an SDF, mol2 or PDB ligand file (None for a record RDKit cannot parse)."""
    suffix = path.suffix.lower()
    if not path.exists():
        raise ConversionError(f"{path}: file not found")
    if suffix in (".sdf", ".sd", ".mol"):
        return list(Chem.SDMolSupplier(str(path), removeHs=False))
    if suffix == ".mol2":
        return [Chem.MolFromMol2Block(block, removeHs=False) for block in _mol2_blocks(path)]
    if suffix == ".pdb":
        return [Chem.MolFromPDBFile(str(path), removeHs=False)]
    raise ConversionError(f"{path}: unsupported ligand format {suffix!r} (use .sdf, .mol2 or .pdb)")


def _mol2_blocks(path: Path) -> list[str]:
    text = path.read_text()
    starts = [m.start() for m in re.finditer(r"^@<TRIPOS>MOLECULE", text, flags=re.M)]
    return [text[a:b] for a, b in zip(starts, starts[1:] + [len(text)])]


def docking_score(mol: Chem.Mol, prop: str, source: str = "") -> float:
    """The pose's docking score from SD property ``prop`` (NaN when the pose has none): the whole property is one
    number, or Vina's result remark (``pecan.runtime.numbers``); ConversionError naming the property otherwise."""
    if not prop or not mol.HasProp(prop):
        return float("nan")
    try:
        return read_docking_score(mol.GetProp(prop), f"{source}{', ' if source else ''}SD property {prop!r}")
    except NotANumber as err:
        raise ConversionError(f"docking score: {err}") from None


# ---------------------------------------------------------------------------- features


def _is_metal(atomic_number: int) -> bool:
    return atomic_number not in NON_METALS


def _family_atoms(mol: Chem.Mol, family: str) -> set[int]:
    """Atoms of any feature of ``family``: the atoms of the matches of the family's SMARTS definitions, as
    the feature factory finds them (unique matches, at most 1,000 per definition) without building feature
    objects (their 3-D positions), which made it 100x slower on a receptor pocket."""
    return {i for pattern in family_patterns(family) for match in mol.GetSubstructMatches(pattern) for i in match}


def atom_features(mol: Chem.Mol, molcode: float) -> np.ndarray:
    """[n_heavy, 22] rows (coordinates and the 19 features) for the heavy atoms of ``mol`` in file order."""
    try:
        rdPartialCharges.ComputeGasteigerCharges(mol, throwOnParamFailure=False)
    except Exception:  # a molecule Gasteiger cannot handle keeps charge 0 rather than failing the pose
        pass
    donors, acceptors = _family_atoms(mol, "Donor"), _family_atoms(mol, "Acceptor")
    hydrophobic = {m[0] for m in mol.GetSubstructMatches(HYDROPHOBIC_SMARTS)}
    positions = mol.GetConformer().GetPositions()
    heavy = [a for a in mol.GetAtoms() if a.GetAtomicNum() > 1]
    rows = np.zeros((len(heavy), layout.N_COLUMNS), dtype=np.float32)
    for row, atom in zip(rows, heavy):
        index, number = atom.GetIdx(), atom.GetAtomicNum()
        row[0:3] = positions[index]
        slot = ELEMENT_SLOTS.get(number, METAL_SLOT if _is_metal(number) else None)
        if slot is not None:
            row[3 + slot] = 1.0
        neighbours = [n.GetAtomicNum() for n in atom.GetNeighbors()]
        row[12] = HYBRIDISATION.get(str(atom.GetHybridization()), 0)
        row[13] = sum(n > 1 for n in neighbours)
        row[14] = sum(n not in (1, 6) for n in neighbours)
        charge = atom.GetDoubleProp("_GasteigerCharge") if atom.HasProp("_GasteigerCharge") else 0.0
        row[15] = charge if np.isfinite(charge) else 0.0
        row[layout.MOLCODE_COLUMN] = molcode
        row[17:22] = (index in hydrophobic, atom.GetIsAromatic(), index in acceptors, index in donors, atom.IsInRing())
    return rows


def van_der_waals(mol: Chem.Mol) -> np.ndarray:
    """Van der Waals radius of each heavy atom (Angstrom), in the order of ``atom_features``."""
    table = Chem.GetPeriodicTable()
    return np.array([table.GetRvdw(a.GetAtomicNum()) for a in mol.GetAtoms() if a.GetAtomicNum() > 1], dtype=np.float32)


def ligand_problem(mol: Optional[Chem.Mol]) -> str:
    """Why a ligand record cannot be featurised ('' when it can): RDKit could not parse it, it has no heavy
    atom (an empty or hydrogen-only record), or it holds more than one molecule (a ligand with a disconnected
    ion, salt or solvent: refused rather than guessed at, since which fragment is the ligand is the file's
    to say)."""
    if mol is None:
        return "RDKit cannot parse this record"
    if mol.GetNumHeavyAtoms() == 0:
        return f"no heavy atoms ({mol.GetNumAtoms()} atoms in all): an empty or hydrogen-only record"
    fragments = Chem.GetMolFrags(mol, asMols=False, sanitizeFrags=False)
    if len(fragments) > 1:
        formulas = ", ".join(_formula(mol, atoms) for atoms in fragments)
        return (
            f"{len(fragments)} disconnected molecules in one record ({formulas}); PECAN takes one molecule per "
            "record: remove the ions, salts or solvents from it"
        )
    return ""


def _formula(mol: Chem.Mol, atoms: tuple) -> str:
    counts = Counter(mol.GetAtomWithIdx(k).GetSymbol() for k in atoms)
    order = sorted(counts, key=lambda e: (e not in ("C", "H"), e != "C", e))
    return "".join(e + (str(counts[e]) if counts[e] > 1 else "") for e in order)


# ---------------------------------------------------------------------------- pockets


def heavy_positions(mol: Chem.Mol) -> np.ndarray:
    """Coordinates of the heavy atoms in file order."""
    positions = mol.GetConformer().GetPositions()
    return positions[[a.GetIdx() for a in mol.GetAtoms() if a.GetAtomicNum() > 1]]


def _min_distances(points: np.ndarray, ligands: list[np.ndarray]) -> np.ndarray:
    best = np.full(len(points), np.inf)
    for ligand in ligands:
        for start in range(0, len(ligand), 64):
            chunk = ligand[start : start + 64]
            d = np.sqrt(((points[:, None, :] - chunk[None, :, :]) ** 2).sum(-1)).min(1)
            best = np.minimum(best, d)
    return best


def pocket_submol(receptor: Chem.Mol, ligands: list[np.ndarray], radius: float) -> Chem.Mol:
    """Whole residues with any atom within ``radius`` of any given ligand (features need residue context)."""
    near = _min_distances(receptor.GetConformer().GetPositions(), ligands) <= radius

    def residue_key(atom):
        info = atom.GetPDBResidueInfo()
        if info is None:
            return ("", atom.GetIdx(), "")
        return (info.GetChainId(), info.GetResidueNumber(), info.GetInsertionCode())

    keep_residues = {residue_key(a) for a in receptor.GetAtoms() if near[a.GetIdx()]}
    editable = Chem.RWMol(receptor)
    for atom in reversed(list(receptor.GetAtoms())):
        if residue_key(atom) not in keep_residues:
            editable.RemoveAtom(atom.GetIdx())
    return _sanitize_leniently(editable.GetMol())


def pocket_rows(
    pocket_atoms: np.ndarray, pocket_vdw: np.ndarray, ligand_xyz: np.ndarray, radius: float
) -> tuple[np.ndarray, np.ndarray]:
    """The pocket rows (and radii) within ``radius`` of this pose's ligand atoms."""
    keep = _min_distances(pocket_atoms[:, :3].astype(np.float64), [ligand_xyz]) <= radius
    return pocket_atoms[keep], pocket_vdw[keep]


# ---------------------------------------------------------------------------- RMSD


def heavy_graph(mol: Chem.Mol) -> Chem.Mol:
    """Heavy atoms with every bond single and no charges or aromaticity: protonation and bond-order
    differences between a pose file and the crystal file then still match atom for atom."""
    heavy = Chem.RemoveHs(mol, sanitize=False)
    editable = Chem.RWMol(heavy)
    for bond in editable.GetBonds():
        bond.SetBondType(Chem.BondType.SINGLE)
        bond.SetIsAromatic(False)
    for atom in editable.GetAtoms():
        atom.SetIsAromatic(False)
        atom.SetFormalCharge(0)
        atom.SetNoImplicit(True)
        atom.SetNumExplicitHs(0)
        atom.SetChiralTag(Chem.ChiralType.CHI_UNSPECIFIED)
    graph = editable.GetMol()
    graph.UpdatePropertyCache(strict=False)
    return graph


def symmetric_rmsd(pose: Chem.Mol, crystal: Chem.Mol) -> float:
    """Heavy-atom RMSD over the graph's symmetry-equivalent atom mappings, without any alignment."""
    pose_graph, crystal_graph = heavy_graph(pose), heavy_graph(crystal)
    if pose_graph.GetNumAtoms() != crystal_graph.GetNumAtoms():
        raise ConversionError(
            f"pose has {pose_graph.GetNumAtoms()} heavy atoms, the crystal ligand {crystal_graph.GetNumAtoms()}"
        )
    try:
        return float(rdMolAlign.CalcRMS(pose_graph, crystal_graph))
    except RuntimeError as err:
        raise ConversionError(f"pose atoms do not match the crystal ligand's graph ({err})") from err
