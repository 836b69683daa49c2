"""Rebuild studies/realdock/inputs/ from clones of the two source repositories of the crystal complexes.

    python -m studies.realdock.prepare SET_OF_42_GIT_DIR VINA_GIT_DIR [--crop 16]

Source 1, the AD-GPU "set of 42" (diogomart/AD-GPU_set_of_42):
The set ships each PDB complex as AutoDock PDBQT (``data/<pdbid>/protein.pdbqt`` and the crystal ligand
``data/<pdbid>/flex-xray.pdbqt``). PDBQT has AutoDock atom types instead of elements and no bond orders, so:
the element is taken from the AutoDock type, the receptor is cropped to whole residues within ``--crop`` A
of the crystal ligand (small enough to commit, larger than any docking box plus Vina's 8 A cutoff), and the
ligand's bond orders are perceived from its crystal geometry by Open Babel (heavy atoms first; with the
polar hydrogens when that fails). A ligand RDKit cannot sanitise, or one with a radical, is left out and listed.
Source 2, the AutoDock Vina examples (ccsb-scripps/AutoDock-Vina, ``example/*/data``): crystal complexes
shipped as a protonated receptor PDB and an SDF ligand; the receptor is cropped the same way (waters dropped).
Writes inputs/<pdbid>/receptor.pdb, inputs/<pdbid>/ligand.sdf, sources.csv and excluded.csv.
"""

from __future__ import annotations

import argparse
import csv
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
REPOSITORY = "diogomart/AD-GPU_set_of_42"
VINA_REPOSITORY = "ccsb-scripps/AutoDock-Vina"
# pdbid -> (receptor, crystal ligand) in the Vina repository: the examples whose ligand is the crystal pose
VINA_EXAMPLES = {
    "1iep": ("example/basic_docking/data/1iep_receptorH.pdb", "example/basic_docking/data/1iep_ligand.sdf"),
    "1s63": (
        "example/docking_with_zinc_metalloproteins/data/proteinH.pdb",
        "example/docking_with_zinc_metalloproteins/data/1s63_ligand.sdf",
    ),
    "1uw6": ("example/hydrated_docking/data/1uw6_receptorH.pdb", "example/hydrated_docking/data/1uw6_ligand.sdf"),
}
# beyond what a redocking benchmark at modest exhaustiveness can sample: left out, listed in excluded.csv
TOO_FLEXIBLE = {"3er5": "91 heavy atoms, 37 rotatable bonds"}
AD_ELEMENT = {
    "A": "C",
    "C": "C",
    "N": "N",
    "NA": "N",
    "NS": "N",
    "OA": "O",
    "OS": "O",
    "O": "O",
    "SA": "S",
    "S": "S",
    "HD": "H",
    "HS": "H",
    "H": "H",
    "P": "P",
    "F": "F",
    "Cl": "Cl",
    "CL": "Cl",
    "Br": "Br",
    "BR": "Br",
    "I": "I",
    "Zn": "Zn",
    "ZN": "Zn",
    "Fe": "Fe",
    "FE": "Fe",
    "Mg": "Mg",
    "MG": "Mg",
    "Mn": "Mn",
    "MN": "Mn",
    "Ca": "Ca",
    "CA": "Ca",
    "Na": "Na",
    "K": "K",
    "Cu": "Cu",
    "Co": "Co",
    "Ni": "Ni",
    "Cd": "Cd",
    "Hg": "Hg",
    "Se": "Se",
    "B": "B",
    "Si": "Si",
}


def git_show(git_dir: Path, commit: str, path: str) -> str:
    """One file of the clone at ``commit``."""
    return subprocess.run(
        ["git", "-C", str(git_dir), "show", f"{commit}:{path}"], check=True, capture_output=True, text=True
    ).stdout


def pdb_lines(pdbqt: str, keep_hydrogens: bool) -> list[str]:
    """ATOM/HETATM records with the element column set from the AutoDock type (column 78-79 of PDBQT)."""
    lines = []
    for line in pdbqt.splitlines():
        if not line.startswith(("ATOM", "HETATM")):
            continue
        element = AD_ELEMENT.get(line[77:79].strip())
        if element is None:
            raise ValueError(f"unknown AutoDock type {line[77:79]!r} in {line!r}")
        if element == "H" and not keep_hydrogens:
            continue
        lines.append(f"{line[:54]}  1.00  0.00          {element.upper():>2}")
    return lines


def xyz(lines: list[str]) -> np.ndarray:
    """Coordinates of PDB records."""
    return np.array([[float(line[30:38]), float(line[38:46]), float(line[46:54])] for line in lines])


def crop(receptor: list[str], ligand_xyz: np.ndarray, radius: float) -> list[str]:
    """Whole residues with any atom within ``radius`` of a ligand atom."""
    points = xyz(receptor)
    near = (np.linalg.norm(points[:, None, :] - ligand_xyz[None, :, :], axis=2) < radius).any(1)
    keys = [line[17:27] for line in receptor]
    kept = {key for key, flag in zip(keys, near) if flag}
    return [line for line, key in zip(receptor, keys) if key in kept]


def perceive(lines: list[str], out: Path) -> str:
    """Open Babel perceives bond orders from the geometry; returns a reason when unusable, else ''."""
    from rdkit import Chem

    with tempfile.TemporaryDirectory() as tmp:
        pdb = Path(tmp) / "ligand.pdb"
        pdb.write_text("\n".join("HETATM" + line[6:17] + "LIG" + line[20:] for line in lines) + "\nEND\n")
        subprocess.run(["obabel", str(pdb), "-O", str(out)], check=True, capture_output=True)
    mol = Chem.MolFromMolFile(str(out))
    if mol is None:
        return "RDKit cannot sanitise the ligand whose bond orders Open Babel perceived"
    if any(atom.GetNumRadicalElectrons() for atom in mol.GetAtoms()):
        return "the perceived ligand has a radical"
    return ""


def ligand_sdf(pdbqt: str, out: Path) -> str:
    """Heavy atoms first, then with the polar hydrogens (which fixes charged amines); '' when one worked."""
    reason = perceive(pdb_lines(pdbqt, keep_hydrogens=False), out)
    if reason:
        reason = perceive(pdb_lines(pdbqt, keep_hydrogens=True), out)
    return reason


def vina_example(git_dir: Path, commit: str, pdbid: str, radius: float, out: Path) -> dict:
    """Crop one Vina example's receptor around its crystal ligand; the ligand is copied as it is."""
    from rdkit import Chem

    receptor_path, ligand_path = VINA_EXAMPLES[pdbid]
    ligand_text = git_show(git_dir, commit, ligand_path)
    ligand = Chem.MolFromMolBlock(ligand_text, removeHs=False)
    heavy = ligand.GetConformer().GetPositions()[[a.GetAtomicNum() > 1 for a in ligand.GetAtoms()]]
    records = [
        line
        for line in git_show(git_dir, commit, receptor_path).splitlines()
        if line.startswith(("ATOM", "HETATM")) and line[17:20] not in ("HOH", "WAT")
    ]
    receptor = crop(records, heavy, radius)
    (out / "receptor.pdb").write_text("\n".join(receptor) + "\nEND\n")
    (out / "ligand.sdf").write_text(ligand_text)
    return {
        "complex_id": pdbid,
        "repository": VINA_REPOSITORY,
        "commit": commit,
        "receptor_source": receptor_path,
        "ligand_source": ligand_path,
        "receptor_atoms_kept": len(receptor),
        "ligand_heavy_atoms": len(heavy),
    }


def resolve(git_dir: Path, revision: str = "HEAD") -> str:
    """The full commit id of ``revision``."""
    return subprocess.run(
        ["git", "-C", str(git_dir), "rev-parse", revision], check=True, capture_output=True, text=True
    ).stdout.strip()


def main(argv=None) -> int:
    """Write the inputs and the provenance table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("git_dir", type=Path, help="clone of diogomart/AD-GPU_set_of_42")
    parser.add_argument("vina_git_dir", type=Path, help="clone of ccsb-scripps/AutoDock-Vina")
    parser.add_argument("--crop", type=float, default=16.0)
    args = parser.parse_args(argv)
    commit = resolve(args.git_dir)
    listing = subprocess.run(
        ["git", "-C", str(args.git_dir), "ls-tree", "--name-only", commit, "data/"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    sources, excluded = [], []
    for folder in sorted(listing):
        pdbid = folder.rsplit("/", 1)[-1]
        if pdbid in TOO_FLEXIBLE:
            excluded.append({"complex_id": pdbid, "reason": TOO_FLEXIBLE[pdbid]})
            continue
        receptor_path, ligand_path = f"{folder}/protein.pdbqt", f"{folder}/flex-xray.pdbqt"
        ligand_text = git_show(args.git_dir, commit, ligand_path)
        ligand = pdb_lines(ligand_text, keep_hydrogens=False)
        receptor = crop(
            pdb_lines(git_show(args.git_dir, commit, receptor_path), keep_hydrogens=True), xyz(ligand), args.crop
        )
        out = HERE / "inputs" / pdbid
        out.mkdir(parents=True, exist_ok=True)
        (out / "receptor.pdb").write_text("\n".join(receptor) + "\nEND\n")
        reason = ligand_sdf(ligand_text, out / "ligand.sdf")
        if reason:
            excluded.append({"complex_id": pdbid, "reason": reason})
            for path in out.iterdir():
                path.unlink()
            out.rmdir()
            continue
        sources.append(
            {
                "complex_id": pdbid,
                "repository": REPOSITORY,
                "commit": commit,
                "receptor_source": receptor_path,
                "ligand_source": ligand_path,
                "receptor_atoms_kept": len(receptor),
                "ligand_heavy_atoms": len(ligand),
            }
        )
    vina_commit = resolve(args.vina_git_dir)
    for pdbid in VINA_EXAMPLES:
        out = HERE / "inputs" / pdbid
        out.mkdir(parents=True, exist_ok=True)
        sources.append(vina_example(args.vina_git_dir, vina_commit, pdbid, args.crop, out))
    for name, rows in (("sources.csv", sources), ("excluded.csv", excluded)):
        with open(HERE / name, "w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=list(rows[0]) if rows else ["complex_id", "reason"])
            writer.writeheader()
            writer.writerows(rows)
    print(f"{len(sources)} complexes written, {len(excluded)} excluded (see excluded.csv)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
