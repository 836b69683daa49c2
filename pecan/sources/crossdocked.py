"""CrossDocked2020 in GNINA's layout -> a `pecan convert` manifest, one row per complex.

A complex is one ligand in one receptor: every pose a types file names for the pair (CrossDocked2020's Vina-
minimised, docked and CNN-iterated files, ``<rec>_rec_<lig>_<name>_lig_{tt_min,tt_docked,it1_tt_docked,...}``)
is gathered, in the types file's order, into ``OUT/poses/<complex_id>.sdf``. Each pose keeps the types file's
numbers as SD properties (``types_label``, ``types_affinity``, ``types_rmsd``) and its Vina score as
``docking_score`` (the line's comment, else the record's ``minimizedAffinity``). The crystal ligand is the
pocket folder's ``<lig>_<name>_lig.pdb`` (or ``<id>_ligand.sdf``/``.mol2`` in PDBbind-like folders) where
present; `pecan convert` then labels each pose by its own RMSD to it, and ``check_rmsd`` compares the two.
"""

from __future__ import annotations

import gzip
import io
import re
from dataclasses import dataclass, field
from pathlib import Path

from pecan.runtime.numbers import number_or_none
from pecan.sources.reserved import reserved_reason
from pecan.sources.selection import Selection
from pecan.sources.types_file import TypesLine, fold_of, forget_files, ligand_record, receptor_file

CROSS_DOCKED_NAME = re.compile(
    r"^(?P<rec>[0-9][A-Za-z0-9]{3})_\w+?_rec_(?P<lig>[0-9][A-Za-z0-9]{3})_(?P<name>\w+?)_lig"
)
PDB_CODE = re.compile(r"^[0-9][A-Za-z0-9]{3}")
MANIFEST_COLUMNS = ("complex_id", "receptor", "poses", "crystal_ligand", "score_property")


@dataclass
class Pose:
    """One pose line: where its record is and the numbers the types file gives it."""

    line: TypesLine
    ligand: Path
    record: int

    @property
    def pose_id(self) -> str:
        """``<ligand file stem>_<record>``: unique within the complex, stable across runs."""
        name = self.ligand.name.removesuffix(".gz").removesuffix(".sdf")
        return f"{name}_{self.record}"


@dataclass
class Complex:
    """A receptor and one ligand's poses in it, with the folds of the files that named them."""

    key: tuple[str, str]
    receptor: Path
    poses: list[Pose] = field(default_factory=list)
    folds: set = field(default_factory=set)
    complex_id: str = ""


def complex_key(receptor: Path, ligand: Path) -> tuple[str, str]:
    """(folder, name) of the complex: the ligand name up to ``_lig`` (CrossDocked2020), else the receptor's
    name without ``_rec`` (one ligand per receptor, as in PDBbind-like folders)."""
    name = ligand.name
    cut = name.find("_lig_") if "_lig_" in name else name.find("_lig.")
    if cut > 0:
        return str(ligand.parent), name[:cut] + "_lig"
    stem = receptor.name.removesuffix(".pdb").removesuffix(".pdbqt")
    return str(receptor.parent), stem.removesuffix("_rec")


def group_lines(lines: list[TypesLine], root: Path) -> list[Complex]:
    """Types lines -> complexes in first-seen order; a pose named twice (a pose in train0 and in test1) is kept once."""
    forget_files()
    complexes: dict[tuple, Complex] = {}
    seen: set = set()
    for line in lines:
        receptor = receptor_file(line.receptor, root)
        ligand, record = ligand_record(line.ligand, root)
        key = complex_key(receptor, ligand)
        entry = complexes.setdefault(key, Complex(key, receptor))
        fold = fold_of(line.types_file)
        if fold:
            entry.folds.add(fold)
        if (receptor, ligand, record) in seen:
            continue
        seen.add((receptor, ligand, record))
        entry.poses.append(Pose(line, ligand, record))
    _name(list(complexes.values()))
    return list(complexes.values())


def _name(complexes: list[Complex]) -> None:
    counts: dict[str, int] = {}
    for entry in complexes:
        counts[entry.key[1]] = counts.get(entry.key[1], 0) + 1
    for entry in complexes:
        folder, name = entry.key
        entry.complex_id = name if counts[name] == 1 else f"{Path(folder).name}_{name}"


def reserved(entry: Complex, names: dict | None = None) -> str:
    """The reserved-protein reason of a complex: by the PDB entries in its names, by its pocket folder's UniProt
    entry name (CrossDocked2020's pockets are named ``<ENTRY>_<first>_<last>_<k>``), and by the UniProt ID and
    protein name a PDBbind name index (``names``: PDB code -> columns) gives those entries."""
    folder = Path(entry.key[0]).name
    codes = [folder[:4], entry.receptor.name[:4]]
    match = CROSS_DOCKED_NAME.match(entry.key[1])
    if match:
        codes += [match.group("rec"), match.group("lig")]
    codes = [c.lower() for c in codes if PDB_CODE.match(c)]
    known = [names[code] for code in codes if names and code in names]
    evidence = (reserved_reason(uniprot=i.get("uniprot", ""), protein_name=i.get("protein", "")) for i in known)
    return reserved_reason(codes, entry_name=folder) or next((r for r in evidence if r), "")


def crystal_ligand(entry: Complex) -> Path | None:
    """The complex's crystal ligand where the folder has it."""
    folder, name = Path(entry.key[0]), entry.key[1]
    match = CROSS_DOCKED_NAME.match(name)
    stems = [f"{match.group('lig')}_{match.group('name')}_lig"] if match else []
    stems += [f"{name}_ligand", f"{folder.name}_ligand"]
    for stem in stems:
        for suffix in (".pdb", ".sdf", ".mol2"):
            if (folder / (stem + suffix)).exists():
                return folder / (stem + suffix)
    return None


def fold_columns(entry: Complex) -> tuple[dict, str]:
    """The complex's ``fold`` (k of the test file naming it) and the train/test files naming it; a complex in both
    the train and test file of one fold, or in two test files, is a reason to leave it out."""
    tests = sorted(k for part, k in entry.folds if part == "test")
    trains = sorted(k for part, k in entry.folds if part == "train")
    if len(tests) > 1:
        return {}, f"in the test files of folds {', '.join(map(str, tests))}"
    clash = sorted(set(tests) & set(trains))
    if clash:
        return {}, f"in both train{clash[0]} and test{clash[0]}"
    return {"fold": tests[0] if tests else "", "train_folds": " ".join(map(str, trains))}, ""


def read_records(path: Path) -> list:
    """Every record of a (gzipped) SDF as RDKit molecules (None where RDKit cannot read one)."""
    from rdkit import Chem

    data = gzip.decompress(path.read_bytes()) if path.name.endswith(".gz") else path.read_bytes()
    return list(Chem.ForwardSDMolSupplier(io.BytesIO(data), removeHs=False))


def _score(pose: Pose, mol) -> str:
    """The Vina score: the comment's first field when it is one number (``pecan.runtime.numbers``), else the
    record's ``minimizedAffinity`` as written (`pecan convert` reads it by the same rule)."""
    comment = pose.line.comment.split()
    value = number_or_none(comment[0]) if comment else None
    if value is not None:
        return repr(value)
    return mol.GetProp("minimizedAffinity") if mol.HasProp("minimizedAffinity") else ""


def pose_molecules(entry: Complex, selection: Selection) -> list[tuple[Pose, object]]:
    """The complex's poses as molecules with their types-file properties; a missing file, a record past the end
    or one RDKit cannot read is an excluded pose row."""
    records: dict[Path, list] = {}
    kept = []
    for pose in entry.poses:
        source = f"{pose.line.types_file}:{pose.line.line}"
        if pose.ligand not in records:
            records[pose.ligand] = read_records(pose.ligand) if pose.ligand.exists() else []
        mols = records[pose.ligand]
        if not pose.ligand.exists():
            selection.exclude(entry.complex_id, source, f"missing file: {pose.ligand}", pose.pose_id)
        elif pose.record >= len(mols) or mols[pose.record] is None:
            reason = f"record {pose.record} of {pose.ligand.name} " + (
                "is past its end" if pose.record >= len(mols) else "is unreadable (RDKit)"
            )
            selection.exclude(entry.complex_id, source, reason, pose.pose_id)
        else:
            kept.append((pose, _with_properties(pose, mols[pose.record])))
    return kept


def _with_properties(pose: Pose, mol):
    from rdkit import Chem

    mol = Chem.Mol(mol)
    mol.SetProp("_Name", pose.pose_id)
    for column, value in pose.line.numbers.items():
        mol.SetProp(f"types_{column}", f"{value:g}")
    score = _score(pose, mol)
    if score:
        mol.SetProp("docking_score", score)
    return mol
