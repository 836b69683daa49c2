"""Each docked complex converted into its own shards (studies/realdock/run.py and the corpus scripts): once, again
only when its poses file changes, with the fallbacks a converter-rejected complex gets."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pandas as pd

from pecan.convert.complexes import Options
from pecan.convert.run import convert as convert_structures
from pecan.convert.run import summary_line
from pecan.data.index_rows import read_index_rows
from studies.realdock.peers import poses_digest

AMINO_ACIDS = frozenset(
    "ALA ARG ASN ASP CYS GLN GLU GLY HIS HID HIE HIP ILE LEU LYS MET PHE PRO SER THR TRP TYR VAL CYX ASH GLH LYN "
    "MSE".split()
)


def without_orphan_hydrogens(receptor: Path, out: Path, amino_acids_only: bool = False) -> Path:
    """A copy of a PDB receptor without hydrogens farther than 1.3 A from every heavy atom (some PDBQT sources
    keep the hydrogens of side-chain atoms they dropped; ProLIF then reports a fragmented residue), and, with
    ``amino_acids_only``, without every other residue (an ion or cofactor written as ATOM records, which the
    converter's HETATM filter cannot see)."""
    lines = [line for line in receptor.read_text().splitlines() if line.startswith(("ATOM", "HETATM"))]
    if amino_acids_only:
        lines = [line for line in lines if line[17:20].strip() in AMINO_ACIDS]
    xyz = np.array([[float(line[30:38]), float(line[38:46]), float(line[46:54])] for line in lines])
    hydrogen = np.array([line[76:78].strip() == "H" for line in lines])
    keep = np.ones(len(lines), bool)
    if hydrogen.any() and (~hydrogen).any():
        nearest = np.linalg.norm(xyz[hydrogen][:, None] - xyz[~hydrogen][None], axis=2).min(1)
        keep[np.flatnonzero(hydrogen)[nearest > 1.3]] = False
    out.write_text("\n".join(line for line, k in zip(lines, keep) if k) + "\nEND\n")
    return out


# Conversion attempts, in order, for a complex the converter rejects: as docked, then without orphan
# hydrogens, then also without HETATM and non-amino-acid residues (a cofactor or ion ProLIF cannot read).
ATTEMPTS = (
    ("as docked", False, False),
    ("orphan hydrogens removed", True, False),
    ("orphan hydrogens and non-amino-acid residues removed", True, True),
)


def convert_one(row: dict, docked: Path, out: Path) -> str:
    """Convert one complex into ``out``; returns the attempt that worked ('' when none did)."""
    out = out.resolve()  # the retry's cleaned receptor must not resolve against the manifest's folder again
    out.mkdir(parents=True, exist_ok=True)
    one = {
        k: (str((docked / v).resolve()) if k in ("receptor", "poses", "crystal_ligand") else v) for k, v in row.items()
    }
    for attempt, (what, clean, drop_hetero) in enumerate(ATTEMPTS):
        if clean:
            source = Path(docked / row["receptor"]).resolve()
            one["receptor"] = str(without_orphan_hydrogens(source, out / "receptor_clean.pdb", drop_hetero))
        pd.DataFrame([one]).to_csv(out / "manifest.csv", index=False)
        if attempt:
            (out / "failures.csv").replace(out / f"failures_attempt{attempt}.csv")
        # The converter of scripts/convert_structures.py, called in-process: one import of RDKit and ProLIF
        # for all complexes instead of one per complex.
        summary = convert_structures(
            out / "manifest.csv", out, Options(drop_hetero=drop_hetero), prefix=row["complex_id"], progress=False
        )
        print(f"{row['complex_id']} ({what}): {summary_line(summary)}", flush=True)
        if summary["complexes"]:
            (out / "attempt.txt").write_text(what + "\n")
            return what
    (out / "attempt.txt").write_text("none worked: see failures_attempt*.csv\n")
    return ""


def convert(docked: Path, shards: Path, only: set[str] | None = None) -> pd.DataFrame:
    """The index of every docked complex (of ``only``, when given), each converted into its own directory
    shards/<complex>/ (once: a converted complex is reused, so a benchmark grows with the docking). Shard paths
    are relative to ``shards``."""
    manifest = pd.read_csv(docked / "manifest.csv", dtype=str, keep_default_na=False)
    if only is not None:
        manifest = manifest[manifest["complex_id"].isin(only)]
    indexes = []
    for row in manifest.to_dict("records"):
        out = shards / row["complex_id"]
        index = out / f"{row['complex_id']}_all.csv"
        digest = poses_digest(docked / row["poses"])
        stamp = out / "poses_sha256.txt"
        if out.exists() and (not stamp.exists() or stamp.read_text().strip() != digest):
            # converted from another version of the poses file (or before the stamp existed): convert again
            print(f"{row['complex_id']}: {docked / row['poses']} differs from the converted poses; converting again")
            shutil.rmtree(out)
        if not index.exists() and not (out / "attempt.txt").exists():
            convert_one(row, docked, out)
            stamp.write_text(digest + "\n")
        if index.exists():
            rows = read_index_rows(index)  # ids stay text (a complex 1e66 is not the number 1e+66)
            rows["shard"] = row["complex_id"] + "/" + rows["shard"]
            indexes.append(rows)
    return pd.concat(indexes, ignore_index=True)
