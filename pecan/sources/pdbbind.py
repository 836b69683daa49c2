"""A PDBbind-style folder -> a `pecan redock` manifest (or a `pecan convert` manifest where poses exist).

The layout is PDBbind's: ``ROOT/<id>/<id>_protein.pdb``, ``<id>_pocket.pdb``, ``<id>_ligand.sdf`` and/or
``<id>_ligand.mol2``, and the INDEX files (``ROOT/index/INDEX_general_PL_data.2020``: PDB code, resolution,
release year, -logKd/Ki, Kd/Ki, reference, ligand name; ``INDEX_general_PL_name.2020``: PDB code, release year,
UniProt ID, protein name; '#' starts a comment line). Every complex that cannot be used is an excluded row with
its reason: a missing file, a ligand RDKit cannot read and sanitise (read as `pecan redock` reads it: the SDF
first, then the mol2), a PDB code seen before (in an earlier folder), or a reserved test protein.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from pecan.runtime.errors import ConfigError, DataError
from pecan.runtime.numbers import number_or_none
from pecan.sources.reserved import reserved_reason
from pecan.sources.selection import Selection, relative

PDB_CODE = re.compile(r"^[0-9][A-Za-z0-9]{3}$")
DATA_COLUMNS = ("resolution", "year", "affinity", "measurement", "reference", "ligand_name")
NAME_COLUMNS = ("uniprot", "protein")
RECEPTOR_FILES = {"protein": "{id}_protein.pdb", "pocket": "{id}_pocket.pdb"}
LIGAND_FILES = ("{id}_ligand.sdf", "{id}_ligand.mol2")


def _data_line(fields: list[str], text: str) -> dict:
    reference, _, ligand = text.partition("//")[2].strip().partition(" ")
    return {
        "resolution": fields[1],
        "year": fields[2],
        "affinity": fields[3],
        "measurement": fields[4] if len(fields) > 4 and fields[4] != "//" else "",
        "reference": reference,
        "ligand_name": ligand.strip().strip("()"),
    }


def _name_line(fields: list[str]) -> dict:
    uniprot = fields[2] if len(fields) > 2 and not set(fields[2]) <= {"-"} else ""
    return {"uniprot": uniprot, "protein": " ".join(fields[3:])}


def _affinity(fields: list[str], line: str, where: str) -> str:
    """The -logKd/Ki column as written: one finite number > 0 (a Kd/Ki below 1 M; ``pecan.runtime.numbers``)."""
    if len(fields) < 4:
        raise DataError(f"{where}: expected resolution, release year and -logKd/Ki (a number): {line!r}")
    value = number_or_none(fields[3])
    if value is None or value <= 0:
        raise DataError(
            f"{where}: -logKd/Ki {fields[3]!r} is not a number > 0 (a finite -logKd/Ki of a Kd/Ki below 1 M): {line!r}"
        )
    return fields[3]


def read_index(path: Path) -> dict[str, dict]:
    """PDB code -> the columns of one INDEX file: a name index (UniProt ID, protein name) when its lines have no
    '//' reference, else a data index (resolution, year, -logKd/Ki as affinity, ...). A line the format does not
    fit, or a PDB code on two lines, is a DataError naming the file and line(s)."""
    index: dict[str, dict] = {}
    lines: dict[str, int] = {}
    for number, line in enumerate(path.read_text(errors="replace").splitlines(), start=1):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        fields = line.split()
        where = f"index {path}, line {number}"
        if not PDB_CODE.match(fields[0]) or len(fields) < 3:
            raise DataError(f"{where}: expected a PDB code and its columns, got {line!r}")
        code = fields[0].lower()
        if code in lines:
            raise DataError(
                f"index {path}: PDB code {fields[0]} on lines {lines[code]} and {number}: one line per complex "
                f"(remove the one that is wrong)"
            )
        lines[code] = number
        if "//" in line:
            _affinity(fields, line, where)
            index[code] = _data_line(fields, line)
        else:
            index[code] = _name_line(fields)
    return index


def default_indexes(root: Path) -> list[Path]:
    """The protein-ligand INDEX files a PDBbind folder ships, in ``ROOT/index/`` or ``ROOT/``: ``INDEX_*PL*``,
    ``INDEX_refined*`` and ``INDEX_core*`` (the protein-protein and nucleic-acid ones have other columns)."""
    found = []
    for folder in (root / "index", root):
        for pattern in ("INDEX_*PL*", "INDEX_refined*", "INDEX_core*"):
            found += sorted(folder.glob(pattern))
    return [p for p in dict.fromkeys(found) if p.is_file() and p.suffix.lower() not in (".pdf", ".txt", ".md")]


def merged_indexes(paths: list[Path]) -> dict[str, dict]:
    """PDB code -> every INDEX column known for it (the first file that gives a column wins)."""
    merged: dict[str, dict] = {}
    for path in paths:
        for code, columns in read_index(path).items():
            entry = merged.setdefault(code, {})
            for key, value in columns.items():
                entry.setdefault(key, value)
    return merged


def names_known(indexes: dict[str, dict]) -> bool:
    """Whether the INDEX files read include a name index (UniProt IDs and protein names for the reserved filter)."""
    return any("uniprot" in columns for columns in indexes.values())


def complex_dirs(root: Path) -> list[Path]:
    """The complex folders under ROOT: named as a PDB code, or holding a ``<name>_protein.pdb`` or ligand file."""
    found = []
    for path in sorted(p for p in root.iterdir() if p.is_dir()):
        if PDB_CODE.match(path.name) or any((path / t.format(id=path.name)).exists() for t in LIGAND_FILES):
            found.append(path)
    return found


def readable_ligand(folder: Path, complex_id: str) -> tuple[Path | None, str]:
    """The first of ``<id>_ligand.sdf`` / ``.mol2`` that RDKit reads and sanitises as `pecan redock` reads a crystal
    ligand (and whose atoms can place a docking box), else (None, every reason)."""
    from pecan.redock.prepare import checked_xyz, read_crystal
    from pecan.runtime.errors import RedockError

    reasons = []
    for template in LIGAND_FILES:
        path = folder / template.format(id=complex_id)
        if not path.exists():
            continue
        try:
            checked_xyz(read_crystal(path), path)
            return path, ""
        except (RedockError, OSError, ValueError) as err:
            reasons.append(f"{path.name}: {err}")
    if not reasons:
        return None, f"missing file: {complex_id}_ligand.sdf or {complex_id}_ligand.mol2"
    return None, "unreadable ligand (" + "; ".join(reasons) + ")"


@dataclass(frozen=True)
class PdbbindOptions:
    """How complexes are read: which receptor file, where poses are (a convert manifest) and their score."""

    receptor: str = "protein"
    poses: str = ""
    score_property: str = ""

    def __post_init__(self) -> None:
        """``poses`` is a path template whose one field is ``{id}``: ConfigError naming --poses otherwise."""
        try:
            self.poses.format(id="1abc")
        except (IndexError, KeyError, ValueError) as err:
            raise ConfigError(
                f"pecan sources pdbbind: --poses {self.poses!r} is not a poses file template: its one field is "
                f"{{id}}, the PDB code (e.g. '{{id}}_docked.sdf'; a literal brace is written twice): "
                f"{type(err).__name__}: {err}"
            ) from None


def _complex_row(folder: Path, complex_id: str, options: PdbbindOptions, base: Path) -> tuple[dict, str]:
    receptor = folder / RECEPTOR_FILES[options.receptor].format(id=complex_id)
    if not receptor.exists():
        return {}, f"missing file: {receptor.name}"
    ligand, reason = readable_ligand(folder, complex_id)
    if ligand is None:
        return {}, reason
    row = {"complex_id": complex_id, "receptor": relative(receptor, base)}
    if options.poses:
        poses = folder / options.poses.format(id=complex_id)
        if not poses.exists():
            return {}, f"missing file: poses {poses}"
        row.update(poses=relative(poses, base), score_property=options.score_property)
    row["crystal_ligand"] = relative(ligand, base)
    return row, ""


def read_pdbbind(roots: list[Path], indexes: dict[str, dict], options: PdbbindOptions, base: Path) -> Selection:
    """Every complex folder of ``roots`` (in order) -> a manifest row with the INDEX columns, or an excluded row."""
    selection, seen = Selection(), {}
    carried = (*DATA_COLUMNS, *NAME_COLUMNS)
    for root in roots:
        for folder in complex_dirs(root):
            complex_id, code = folder.name, folder.name.lower()
            info = indexes.get(code, {})
            reason = reserved_reason([code], info.get("uniprot", ""), info.get("protein", ""))
            if not reason and code in seen:
                reason = f"duplicate: {code} already read from {seen[code]}"
            row = {}
            if not reason:
                row, reason = _complex_row(folder, complex_id, options, base)
            if reason:
                selection.exclude(complex_id, str(folder), reason)
                continue
            seen[code] = folder
            selection.rows.append({**row, **{c: info.get(c, "") for c in carried}})
    return selection
