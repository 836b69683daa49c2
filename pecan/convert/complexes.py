"""One manifest row -> one converted complex (crystal and poses as shard arrays) plus its failures."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import numpy as np

from pecan.convert import chemistry as chem
from pecan.convert.chemistry import ConversionError
from pecan.data import layout
from pecan.runtime.manifest import check_unique_ids, read_manifest_frame
from pecan.runtime.numbers import read_number

REQUIRED_COLUMNS = ("complex_id", "receptor", "poses")
OPTIONAL_COLUMNS = ("crystal_ligand", "affinity", "score_property")


@dataclass(frozen=True)
class ComplexEntry:
    """One manifest row with its paths resolved."""

    complex_id: str
    receptor: Path
    poses: Path
    crystal_ligand: Optional[Path] = None
    affinity: float = float("nan")
    score_property: str = ""


@dataclass(frozen=True)
class Options:
    """Conversion settings shared by every complex."""

    pocket_radius: float = 8.0
    rmsd_threshold: float = 2.0
    drop_hetero: bool = False


@dataclass
class Sample:
    """One pose (or the crystal) ready to write: [n, 22] float32 rows, per-atom radii and attributes."""

    pose_id: str
    data: np.ndarray
    vdw: np.ndarray
    attrs: dict


@dataclass
class ConvertedComplex:
    """A complex's samples and the failures met on the way (pose-level ones do not drop the complex)."""

    complex_id: str
    affinity: float
    poses: list[Sample] = field(default_factory=list)
    crystal: Optional[Sample] = None
    failures: list[dict] = field(default_factory=list)


def _blank(value) -> bool:
    return value is None or (isinstance(value, float) and np.isnan(value)) or str(value).strip() == ""


def read_manifest(path: Path) -> list[ComplexEntry]:
    """Manifest rows with relative paths resolved against the manifest's directory."""
    frame = read_manifest_frame(path, REQUIRED_COLUMNS, OPTIONAL_COLUMNS)
    check_unique_ids(frame, path)
    return manifest_entries(frame, path.parent, path)


def manifest_entries(frame, base: Path, source: Optional[Path] = None) -> list[ComplexEntry]:
    """A manifest frame's rows as entries, relative paths resolved against ``base``; an ``affinity`` that is not
    one number (``pecan.runtime.numbers``) is a NotANumber naming the manifest (``source``), complex and column."""

    def resolve(value):
        return None if _blank(value) else (Path(value) if Path(value).is_absolute() else base / value)

    entries = []
    for row in frame.to_dict("records"):
        affinity = row.get("affinity", "")
        entries.append(
            ComplexEntry(
                complex_id=row["complex_id"].strip(),
                receptor=resolve(row["receptor"]),
                poses=resolve(row["poses"]),
                crystal_ligand=resolve(row.get("crystal_ligand", "")),
                affinity=float("nan")
                if _blank(affinity)
                else read_number(affinity, f"manifest {source or base}, complex {row['complex_id'].strip()}, affinity"),
                score_property=row.get("score_property", "").strip(),
            )
        )
    return entries


def pose_ids(complex_id: str, mols: list) -> list[str]:
    """Record names when they are unique, usable as HDF5 names and non-empty; else <complex>_pose<k>."""
    names = [m.GetProp("_Name").strip() if m is not None and m.HasProp("_Name") else "" for m in mols]
    usable = all(names) and len(set(names)) == len(names) and not any("/" in n or n == "." for n in names)
    return names if usable else [f"{complex_id}_pose{k}" for k in range(1, len(mols) + 1)]


def with_hydrogens(mol):
    """ProLIF needs explicit hydrogens; add them (with coordinates) to a pose that has none."""
    if any(a.GetAtomicNum() == 1 for a in mol.GetAtoms()):
        return mol
    return chem.Chem.AddHs(mol, addCoords=True)


class ComplexConverter:
    """Converts one complex; every problem becomes a failure row, never an exception."""

    def __init__(self, entry: ComplexEntry, options: Options, records: Optional[list] = None) -> None:
        self.entry, self.options, self.records = entry, options, records
        self.result = ConvertedComplex(entry.complex_id, entry.affinity)

    def fail(self, reason: str, pose: str = "") -> None:
        """Record a failure of the complex (pose empty) or of one pose."""
        self.result.failures.append({"complex_id": self.entry.complex_id, "pose_id": pose, "reason": reason})

    def run(self) -> ConvertedComplex:
        """Convert; the result has no samples when the complex as a whole failed."""
        try:
            self._convert()
        except ConversionError as err:
            self.fail(str(err))
            self.result.poses, self.result.crystal = [], None
        except Exception as err:  # a parser bug on odd input must not stop the whole conversion
            self.fail(f"unexpected {type(err).__name__}: {err}")
            self.result.poses, self.result.crystal = [], None
        return self.result

    def _convert(self) -> None:
        entry, options = self.entry, self.options
        if not entry.receptor.exists():
            raise ConversionError(f"receptor {entry.receptor}: file not found")
        receptor = chem.read_receptor(entry.receptor, options.drop_hetero)
        crystal = self._crystal()
        records = self.records if self.records is not None else chem.read_ligands(entry.poses)
        if not records:
            raise ConversionError(f"poses {entry.poses}: no records")
        ids = pose_ids(entry.complex_id, records)
        problems = [chem.ligand_problem(m) for m in records]
        usable = [m for m, problem in zip(records, problems) if not problem]
        if not usable:  # say why each record failed, not that no receptor atom is near no ligand
            for pose_id, problem in zip(ids, problems):
                self.fail(f"{entry.poses}: {problem}", pose_id)
            raise ConversionError("no pose could be converted (see the pose rows)")
        ligands = [chem.heavy_positions(m) for m in [crystal, *usable] if m is not None]
        pocket = chem.pocket_submol(receptor, ligands, options.pocket_radius)
        if pocket.GetNumHeavyAtoms() == 0:
            raise ConversionError(f"no receptor atoms within {options.pocket_radius} A of any ligand")
        pocket_atoms, pocket_vdw = chem.atom_features(pocket, -1.0), chem.van_der_waals(pocket)
        # ProLIF's interaction counts evaluated with numpy: equal on every pose of the corpus, 20x cheaper a pose
        # (pecan.convert.contacts; benchmarks/bench_contacts.py).
        from pecan.convert.contacts import ContactCounter

        counter = ContactCounter(pocket)
        if crystal is not None:
            self.result.crystal = self._sample(crystal, "", 0.0, pocket_atoms, pocket_vdw, counter, is_crystal=True)
        for pose_id, mol, problem in zip(ids, records, problems):
            try:
                if problem:
                    raise ConversionError(f"{entry.poses}: {problem}")
                rmsd = chem.symmetric_rmsd(mol, crystal) if crystal is not None else float("nan")
                self.result.poses.append(self._sample(mol, pose_id, rmsd, pocket_atoms, pocket_vdw, counter))
            except ConversionError as err:
                self.fail(str(err), pose_id)
        if not self.result.poses:
            raise ConversionError("no pose could be converted (see the pose rows)")

    def _crystal(self):
        path = self.entry.crystal_ligand
        if path is None:
            return None
        mols = chem.read_ligands(path)
        problem = chem.ligand_problem(mols[0] if mols else None)
        if problem:
            raise ConversionError(f"crystal ligand {path}: {problem}")
        return mols[0]

    def _sample(
        self, mol, pose_id: str, rmsd: float, pocket_atoms, pocket_vdw, counter, is_crystal: bool = False
    ) -> Sample:
        ligand = chem.atom_features(mol, 1.0)
        protein, protein_vdw = chem.pocket_rows(
            pocket_atoms, pocket_vdw, ligand[:, :3].astype(np.float64), self.options.pocket_radius
        )
        what = "the crystal ligand" if is_crystal else "this pose"
        if len(protein) == 0:
            raise ConversionError(f"no receptor atoms within {self.options.pocket_radius} A of {what}")
        entry = self.entry
        score = float("nan") if is_crystal else chem.docking_score(mol, entry.score_property, str(entry.poses))
        attrs = {"rmsd": float(rmsd), "score": score}
        if not np.isnan(rmsd):
            attrs["label"] = int(rmsd < self.options.rmsd_threshold)
        attrs.update(counter.counts(with_hydrogens(mol)))
        return Sample(  # float32, as the shard writer stores them (half the memory for `pecan score`)
            pose_id or layout.DEFAULT_CRYSTAL_GROUP.rpartition("/")[2],
            np.concatenate([ligand, protein]).astype(np.float32),
            np.concatenate([chem.van_der_waals(mol), protein_vdw]).astype(np.float32),
            attrs,
        )


def convert_complex(entry: ComplexEntry, options: Options, records: Optional[list] = None) -> ConvertedComplex:
    """Convert one manifest row (never raises for bad input: see ``failures``); ``records``: the poses file's
    molecules already parsed (``chemistry.read_ligands``), so a caller that keeps them parses it once."""
    return ComplexConverter(entry, options, records).run()
