"""The CrossDocked2020 reader's run: types files -> OUT/poses/*.sdf, OUT/manifest.csv (a `pecan convert`
manifest), OUT/poses.csv (every pose's types-file numbers, and its recomputed RMSD where asked), OUT/crystals/ (PDB
crystal ligands as SDF), OUT/splits/ (the fold files' complexes) and OUT/excluded.csv."""

from __future__ import annotations

import io
import logging
import math
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from pecan.runtime.fileio import write_csv, write_text
from pecan.sources.crossdocked import (
    MANIFEST_COLUMNS,
    Complex,
    crystal_ligand,
    fold_columns,
    group_lines,
    pose_molecules,
    reserved,
)
from pecan.sources.crossdocked_jobs import read_all
from pecan.sources.selection import Selection, relative, write_selection
from pecan.sources.types_file import DEFAULT_COLUMNS, read_types

log = logging.getLogger(__name__)

POSE_COLUMNS = ("complex_id", "pose_id", "types_file", "line", "label", "affinity", "rmsd", "recomputed_rmsd")


@dataclass(frozen=True)
class CrossDockedOptions:
    """The numbers' names in the types files, whether to recompute each pose's RMSD to the crystal ligand, and a
    PDBbind name index (PDB code -> UniProt ID, protein name) for the reserved filter."""

    columns: tuple[str, ...] = DEFAULT_COLUMNS
    check_rmsd: bool = False
    names: dict = field(default_factory=dict)


def _sdf_text(molecules: list) -> str:
    from rdkit import Chem

    buffer = io.StringIO()
    writer = Chem.SDWriter(buffer)
    for mol in molecules:
        writer.write(mol)
    writer.close()
    return buffer.getvalue()


def _recomputed(mols: list, crystal: Path | None) -> list:
    from pecan.convert.chemistry import read_ligands, symmetric_rmsd
    from pecan.runtime.errors import ConversionError

    reference = read_ligands(crystal)[0] if crystal is not None else None
    values = []
    for mol in mols:
        try:
            values.append(symmetric_rmsd(mol, reference) if reference is not None else math.nan)
        except ConversionError:
            values.append(math.nan)
    return values


def crystal_as_sdf(crystal: Path, template, path: Path) -> Path:
    """A PDB crystal ligand (CrossDocked2020's ``<lig>_<name>_lig.pdb``) as an SDF with the poses' bond orders,
    which `pecan convert` reads as it reads the poses; the PDB itself where RDKit cannot match the two."""
    from rdkit import Chem
    from rdkit.Chem import AllChem

    if crystal.suffix.lower() != ".pdb":
        return crystal
    mol = Chem.MolFromPDBFile(str(crystal), removeHs=True)
    try:
        mol = AllChem.AssignBondOrdersFromTemplate(Chem.RemoveHs(template), mol)
    except (ValueError, RuntimeError, AttributeError):  # None or a different molecule
        return crystal
    mol.SetProp("_Name", crystal.stem)
    return write_text(path, Chem.MolToMolBlock(mol) + "$$$$\n")


def _affinity(entry: Complex) -> str:
    values = [abs(p.line.numbers.get("affinity", 0.0)) for p in entry.poses]
    return next((f"{v:g}" for v in values if v > 0), "")


def convert_complex(entry: Complex, out: Path, options: CrossDockedOptions, selection: Selection) -> list[dict]:
    """One complex -> its poses file and manifest row (or an excluded row); returns its pose-table rows."""
    source = str(entry.receptor.parent)
    folds, reason = fold_columns(entry)
    reason = (
        reserved(entry, options.names)
        or reason
        or ("" if entry.receptor.exists() else f"missing file: {entry.receptor}")
    )
    if reason:
        selection.exclude(entry.complex_id, source, reason)
        return []
    kept = pose_molecules(entry, selection)
    if not kept:
        selection.exclude(entry.complex_id, source, "no readable pose")
        return []
    poses_path = out / "poses" / f"{entry.complex_id}.sdf"
    write_text(poses_path, _sdf_text([mol for _, mol in kept]))
    crystal = crystal_ligand(entry)
    if crystal is not None:
        crystal = crystal_as_sdf(crystal, kept[0][1], out / "crystals" / f"{entry.complex_id}.sdf")
    scored = all(mol.HasProp("docking_score") for _, mol in kept)
    selection.rows.append(
        {
            "complex_id": entry.complex_id,
            "receptor": relative(entry.receptor, out),
            "poses": relative(poses_path, out),
            "crystal_ligand": relative(crystal, out) if crystal else "",
            "score_property": "docking_score" if scored else "",
            "affinity": _affinity(entry),
            "pocket": Path(source).name,
            **folds,
        }
    )
    recomputed = _recomputed([m for _, m in kept], crystal) if options.check_rmsd else [math.nan] * len(kept)
    return [
        {
            "complex_id": entry.complex_id,
            "pose_id": pose.pose_id,
            "types_file": str(pose.line.types_file),
            "line": pose.line.line,
            **{c: pose.line.numbers.get(c, math.nan) for c in ("label", "affinity", "rmsd")},
            "recomputed_rmsd": value,
        }
        for (pose, _), value in zip(kept, recomputed)
    ]


def write_splits(rows: list[dict], out: Path) -> list[Path]:
    """OUT/splits/fold<k>_train.csv and fold<k>_test.csv (complex_id) for every fold the files named."""
    written = []
    folds = {int(r["fold"]) for r in rows if str(r.get("fold", "")) != ""}
    folds = sorted(folds | {int(k) for r in rows for k in str(r.get("train_folds", "")).split()})
    for fold in folds:
        test = [r["complex_id"] for r in rows if str(r.get("fold", "")) == str(fold)]
        train = [r["complex_id"] for r in rows if str(fold) in str(r.get("train_folds", "")).split()]
        for part, ids in (("train", train), ("test", test)):
            path = out / "splits" / f"fold{fold}_{part}.csv"
            written.append(write_csv(pd.DataFrame({"complex_id": ids}), path))
    # A fold file an earlier run wrote and this one does not (other types files) would pair this manifest
    # with another run's split.
    for stale in sorted(set((out / "splits").glob("fold*_*.csv")) - set(written)):
        stale.unlink()
        log.warning("removed %s: a fold file of an earlier run that this run's types files do not name", stale)
    return written


def rmsd_agreement(poses: pd.DataFrame, tolerance: float = 0.5) -> str:
    """How the types files' RMSDs compare with PECAN's recomputed ones, over the poses that have both."""
    both = poses.dropna(subset=["rmsd", "recomputed_rmsd"])
    if both.empty:
        return "RMSD check: no pose has both the types file's RMSD and a crystal ligand to recompute it"
    gap = (both["rmsd"] - both["recomputed_rmsd"]).abs()
    return (
        f"RMSD check: {int((gap <= tolerance).sum())}/{len(both)} poses agree within {tolerance} A "
        f"(largest gap {gap.max():.2f} A)"
    )


def read_crossdocked(types_files: list[Path], root: Path, out: Path, options: CrossDockedOptions, engine=None):
    """Every complex of ``types_files`` -> OUT; returns (selection, pose table, extra summary lines). ``engine``
    (pecan.sources.crossdocked_jobs) reads the complexes in chunks on a cluster's workers."""
    lines = [line for path in types_files for line in read_types(path, options.columns)]
    selection = Selection()
    pose_rows = read_all(list(group_lines(lines, root)), out, options, selection, convert_complex, engine)
    poses = pd.DataFrame(pose_rows, columns=list(POSE_COLUMNS))
    write_csv(poses, out / "poses.csv")
    notes = [f"splits: {len(write_splits(selection.rows, out)) // 2} folds -> {out / 'splits'}"]
    if options.check_rmsd:
        notes.append(rmsd_agreement(poses))
    write_selection(selection, out / "manifest.csv", MANIFEST_COLUMNS)
    return selection, poses, notes
