"""Inputs of one redocking: the receptor as PDBQT (Open Babel), the ligand's RDKit start conformer and its
PDBQT (Meeko), and the search box around the crystal ligand.

Receptors go through Open Babel (``obabel -xr -h``) rather than Meeko's polymer preparation: crystal PDB
files routinely have missing side-chain atoms, alternate locations, ions and cofactors, which Meeko's
residue templates reject, while Open Babel types any atom (it adds hydrogens, keeps the polar ones as HD and
merges the rest, which is what Vina's scoring uses). Ligands go through Meeko, which keeps the RDKit atom
order so the docked poses come back as RDKit molecules with the crystal ligand's bond orders.
"""

from __future__ import annotations

import logging
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pecan.runtime.errors import RedockError

log = logging.getLogger(__name__)
WATER_RESIDUES = {"HOH", "WAT", "DOD", "H2O", "TIP", "TIP3", "SOL"}


def _rdkit():
    try:
        from rdkit import Chem
        from rdkit.Chem import AllChem
    except ImportError as err:  # pragma: no cover - exercised only without the extra
        raise ImportError("redocking needs the dock extra: pip install -e '.[dock]'") from err
    return Chem, AllChem


@dataclass(frozen=True)
class Box:
    """Vina's search box: centre and edge lengths (A)."""

    center: tuple[float, float, float]
    size: tuple[float, float, float]


def box_around(ligand_xyz: np.ndarray, padding: float, fixed_size: float = 0.0) -> Box:
    """The box centred on the crystal ligand: its extent plus ``padding`` on every side, or a cube of
    ``fixed_size`` when that is > 0."""
    low, high = ligand_xyz.min(0), ligand_xyz.max(0)
    center = (low + high) / 2
    size = np.full(3, fixed_size) if fixed_size > 0 else high - low + 2 * padding
    return Box(tuple(float(v) for v in center), tuple(float(v) for v in size))


def read_crystal(path: Path):
    """The crystal ligand's first record (SDF, mol2 or PDB), hydrogens removed."""
    Chem, _ = _rdkit()
    from pecan.convert.chemistry import ligand_problem, read_ligands
    from pecan.runtime.errors import ConversionError

    try:
        mols = read_ligands(path)
    except ConversionError as err:
        raise RedockError(str(err)) from err
    problem = ligand_problem(mols[0] if mols else None)
    if problem:
        raise RedockError(f"crystal ligand {path}: {problem}")
    return Chem.RemoveHs(mols[0])


def heavy_xyz(mol) -> np.ndarray:
    """Heavy-atom coordinates of the first conformer."""
    xyz = mol.GetConformer().GetPositions()
    return xyz[[a.GetAtomicNum() > 1 for a in mol.GetAtoms()]]


def checked_xyz(mol, path: Path) -> np.ndarray:
    """Heavy-atom coordinates that can set a search box: finite, and not all at one point (a degenerate file
    would leave Vina searching a box of padding only, for minutes)."""
    xyz = heavy_xyz(mol)
    if len(xyz) == 0:
        raise RedockError(
            f"crystal ligand {path}: no heavy atoms (an empty or hydrogen-only record); it cannot place the docking box"
        )
    if not np.isfinite(xyz).all():
        raise RedockError(f"crystal ligand {path}: non-finite coordinates")
    if len(xyz) > 1 and float(np.ptp(xyz, axis=0).max()) < 0.5:
        raise RedockError(
            f"crystal ligand {path}: all {len(xyz)} heavy atoms lie within 0.5 A of one point "
            "(degenerate geometry; it cannot place the docking box)"
        )
    return xyz


def start_conformer(crystal, seed: int):
    """A protonated ETKDG conformer of the crystal ligand's molecule (its coordinates are discarded; chirality
    and double-bond geometry read from the crystal are kept), MMFF-relaxed when MMFF has parameters."""
    Chem, AllChem = _rdkit()
    mol = Chem.AddHs(Chem.Mol(crystal))
    mol.RemoveAllConformers()
    params = AllChem.ETKDGv3()
    params.randomSeed = seed
    if AllChem.EmbedMolecule(mol, params) != 0:
        params.useRandomCoords = True
        if AllChem.EmbedMolecule(mol, params) != 0:
            raise RedockError("RDKit ETKDG cannot embed the ligand")
    if AllChem.MMFFHasAllMoleculeParams(mol):
        AllChem.MMFFOptimizeMolecule(mol, maxIters=500)
    return mol


def start_rmsd(start, crystal) -> float:
    """Best-fit heavy-atom RMSD of the start conformer to the crystal pose (shows the start is not the crystal)."""
    Chem, _ = _rdkit()
    from rdkit.Chem import rdMolAlign

    return float(rdMolAlign.GetBestRMS(Chem.RemoveHs(start), crystal))


def ligand_pdbqt(mol) -> str:
    """Meeko's PDBQT of the protonated ligand (rotatable bonds as torsions)."""
    try:
        from meeko import MoleculePreparation, PDBQTWriterLegacy
    except ImportError as err:
        raise ImportError("redocking needs the dock extra (meeko): pip install -e '.[dock]'") from err
    setups = MoleculePreparation().prepare(mol)
    text, ok, message = PDBQTWriterLegacy.write_string(setups[0])
    if not ok:
        raise RedockError(f"meeko cannot write the ligand PDBQT: {message}")
    return text


# Elements AutoDock Vina's atom typing knows (organic, halogens and the metals it types as Met_D); a receptor
# atom of any other element (vanadate, molybdate, tungstate, ...) makes Vina reject the whole receptor.
VINA_ELEMENTS = {
    *"H C N O F P S CL BR I".split(),
    *"MG MN ZN CA FE CU NA K HG NI CO CD".split(),
}


def _element(line: str) -> str:
    element = line[76:78].strip().upper()
    return element or "".join(c for c in line[12:14] if c.isalpha()).upper()


def clean_receptor_lines(path: Path) -> list[str]:
    """ATOM/HETATM records without waters, first alternate location only, and without every residue holding an
    element Vina cannot type (logged, so the record of the complex says what was left out)."""
    lines = []
    for line in path.read_text(errors="replace").splitlines():
        if not line.startswith(("ATOM", "HETATM")) or line[17:20].strip() in WATER_RESIDUES:
            continue
        if line[16] not in (" ", "A"):
            continue
        lines.append(line[:16] + " " + line[17:])
    untyped = {line[17:27] for line in lines if _element(line) not in VINA_ELEMENTS}
    if untyped:
        log.warning(
            "receptor %s: left out %d residue(s) with elements Vina cannot type: %s",
            path,
            len(untyped),
            ", ".join(sorted(" ".join(key.split()) for key in untyped)),
        )
        lines = [line for line in lines if line[17:27] not in untyped]
    if not lines:
        raise RedockError(f"receptor {path}: no ATOM/HETATM records")
    return lines


def receptor_pdbqt(path: Path, out: Path) -> Path:
    """Rigid receptor PDBQT written by Open Babel (a .pdbqt input is used as it is)."""
    if path.suffix.lower() == ".pdbqt":
        return path
    if shutil.which("obabel") is None:
        raise RedockError("receptor preparation needs Open Babel's obabel on PATH (apt-get install openbabel)")
    # Named for the complex, so that a rank restarted after a kill can remove what its preparation left.
    with tempfile.TemporaryDirectory(dir=out.parent, prefix=f".prepare-{out.stem}-") as tmp:
        cleaned = Path(tmp) / "receptor.pdb"
        cleaned.write_text("\n".join(clean_receptor_lines(path)) + "\nEND\n")
        written = Path(tmp) / out.name
        # Relative names, run in the temp folder: obabel writes the input's name into the PDBQT, and a temp
        # folder's random name would make the same receptor's file differ from run to run.
        done = subprocess.run(
            ["obabel", cleaned.name, "-xr", "-h", "-O", written.name],
            check=False,
            capture_output=True,
            text=True,
            cwd=tmp,
        )
        if done.returncode != 0 or not written.exists() or written.stat().st_size == 0:
            raise RedockError(f"receptor {path}: obabel failed: {done.stderr.strip()[-300:]}")
        written.replace(out)
    return out
