"""Tiny synthetic structures (RDKit-built) for exact conversion checks."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import numpy as np
from rdkit import Chem
from rdkit.Chem import AllChem
from rdkit.Geometry import Point3D

GRID = 0.25  # coordinates on this grid are written and read back exactly by SDF's %10.4f


def ligand(smiles: str, seed: int = 7, hydrogens: bool = False) -> Chem.Mol:
    """A 3-D ligand with its coordinates snapped to GRID (so translations give exact RMSDs)."""
    mol = Chem.AddHs(Chem.MolFromSmiles(smiles))
    AllChem.EmbedMolecule(mol, randomSeed=seed)
    if not hydrogens:
        mol = Chem.RemoveHs(mol)
    set_positions(mol, np.round(mol.GetConformer().GetPositions() / GRID) * GRID)
    return mol


def set_positions(mol: Chem.Mol, xyz: np.ndarray) -> Chem.Mol:
    """Overwrite the conformer's coordinates in place."""
    conformer = mol.GetConformer()
    for i, (x, y, z) in enumerate(np.asarray(xyz, dtype=float)):
        conformer.SetAtomPosition(i, Point3D(x, y, z))
    return mol


def moved(mol: Chem.Mol, rotation: np.ndarray = np.eye(3), translation=(0.0, 0.0, 0.0)) -> Chem.Mol:
    """A copy rotated about the heavy-atom centroid, then translated."""
    copy = Chem.Mol(mol)
    xyz = copy.GetConformer().GetPositions()
    heavy = [a.GetIdx() for a in copy.GetAtoms() if a.GetAtomicNum() > 1]
    centre = xyz[heavy].mean(0)
    return set_positions(copy, (xyz - centre) @ rotation.T + centre + np.asarray(translation))


def rotation(axis, degrees: float) -> np.ndarray:
    """Rotation matrix about ``axis``."""
    axis = np.asarray(axis, dtype=float) / np.linalg.norm(axis)
    angle = np.deg2rad(degrees)
    k = np.array([[0, -axis[2], axis[1]], [axis[2], 0, -axis[0]], [-axis[1], axis[0], 0]])
    return np.eye(3) + np.sin(angle) * k + (1 - np.cos(angle)) * k @ k


def write_sdf(path: Path, mols: list[Chem.Mol], names=None, props=None) -> Path:
    """A multi-record SDF (optional record names and SD properties)."""
    writer = Chem.SDWriter(str(path))
    for k, mol in enumerate(mols):
        mol = Chem.Mol(mol)
        mol.SetProp("_Name", names[k] if names else "")
        for key, value in (props[k] if props else {}).items():
            mol.SetProp(key, str(value))
        writer.write(mol)
    writer.close()
    return path


def write_receptor(
    path: Path, around: np.ndarray, sequence: str = "GSAGSAGSKDG", gap: float = 4.0, with_water: bool = True
) -> Path:
    """A peptide whose centroid sits ``gap`` A beside the ligand centroid (plus a water and a zinc ion)."""
    peptide = Chem.Mol(_embedded_peptide(sequence))
    xyz = peptide.GetConformer().GetPositions()
    set_positions(peptide, xyz - xyz.mean(0) + around.mean(0) + np.array([gap, 0.0, 0.0]))
    block = Chem.MolToPDBBlock(peptide, flavor=4).replace("END\n", "")
    centre = around.mean(0) + np.array([gap, 3.0, 0.0])
    lines = [block.rstrip("\n")]
    if with_water:
        lines.append(_hetatm(9001, "O", "HOH", 901, centre + np.array([0.0, 0.0, 2.0]), "O"))
    lines.append(_hetatm(9002, "ZN", "ZN", 902, centre, "Zn"))
    path.write_text("\n".join(lines) + "\nEND\n")
    return path


@lru_cache(maxsize=None)
def _embedded_peptide(sequence: str) -> Chem.Mol:
    """The peptide with hydrogens, embedded with a fixed seed: the same conformer every call, so it is embedded
    once per process (half a second each) and copied; callers must not change it."""
    peptide = Chem.AddHs(Chem.MolFromSequence(sequence), addResidueInfo=True)
    AllChem.EmbedMolecule(peptide, randomSeed=3)
    return peptide


def _hetatm(serial: int, name: str, residue: str, number: int, xyz, element: str) -> str:
    return (
        f"HETATM{serial:5d} {name:<4} {residue:>3} B{number:4d}    "
        f"{xyz[0]:8.3f}{xyz[1]:8.3f}{xyz[2]:8.3f}  1.00  0.00          {element.upper():>2}"
    )


def manifest(path: Path, rows: list[dict]) -> Path:
    """Write a manifest CSV from dicts (columns from the first row)."""
    import pandas as pd

    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def prolif_example(name: str) -> Path:
    """A file of ProLIF's bundled example data (prolif/data/...)."""
    from pecan.convert.examples import prolif_data

    return prolif_data() / name
