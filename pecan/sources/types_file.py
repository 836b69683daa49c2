"""GNINA's types files: one pose per line, ``label [affinity] [rmsd] receptor ligand [# comment]``.

The numbers before the two file names are read in the order ``columns`` names them (CrossDocked2020's files:
label, pK, RMSD to the crystal pose, with the Vina score as the comment; its DenseNet ``mod_`` files and
PDBbind's crystal-only files have no RMSD column: label, pK). A line with fewer numbers fills what it has.
File names are GNINA's: a ``.gninatypes`` name stands for the structure it was made from, ``<stem>_<k>.gninatypes``
for record k (from 0) of ``<stem>.sdf.gz`` (or ``.sdf``) for a ligand and for ``<stem>.pdb`` for a receptor.
"""

from __future__ import annotations

import functools
import gzip
import os
import re
from dataclasses import dataclass
from pathlib import Path

from pecan.runtime.errors import DataError
from pecan.runtime.numbers import number_or_none

DEFAULT_COLUMNS = ("label", "affinity", "rmsd")
POSE_SUFFIX = re.compile(r"^(?P<stem>.+)_(?P<index>\d+)$")
FOLD_FILE = re.compile(r"(?P<part>train|test)(?P<fold>\d+)\.types$")
LIGAND_FORMATS = (".sdf.gz", ".sdf")
FILE_NAME = re.compile(r"\.[A-Za-z]\w*$")  # a suffix: what a receptor or ligand name ends with


@dataclass(frozen=True)
class TypesLine:
    """One pose of a types file: its numbers, the receptor and ligand names as written, the comment."""

    types_file: Path
    line: int
    numbers: dict
    receptor: str
    ligand: str
    comment: str


def _wrong_field(fields: list[str], values: list[float], columns: tuple[str, ...]) -> str:
    """Which field of a line that does not fit is wrong, in words."""
    names, k = fields[len(values) :], len(values)
    if k > len(columns):
        return f"field {len(columns) + 1} {fields[len(columns)]!r} is a number past the {len(columns)} columns"
    misread = any(number_or_none(name) is not None for name in names[1:]) or not FILE_NAME.search(names[0])
    if k == 0 or (len(names) > 2 and misread):
        column = f" ({columns[k]})" if k < len(columns) else ""
        return f"field {k + 1}{column} {names[0]!r} is not a number"
    return f"{len(names)} file name(s) after the numbers, expected a receptor and a ligand"


def parse_line(text: str, path: Path, number: int, columns: tuple[str, ...]) -> TypesLine | None:
    """One line (None for a blank or comment-only line); a line without a label and two file names, or with more
    numbers than ``columns`` names, is a ValueError quoting the whole line and naming the file, line and field."""
    body, _, comment = text.partition("#")
    fields = body.split()
    if not fields:
        return None
    values = []
    for field in fields:
        value = number_or_none(field)
        if value is None:
            break
        values.append(value)
    names = fields[len(values) :]
    if not values or len(names) != 2 or len(values) > len(columns):
        raise DataError(
            f"types file {path}, line {number}: {_wrong_field(fields, values, columns)}; expected "
            f"{' '.join(columns)} (the first {len(columns)} at most) then a receptor and a ligand file, "
            f"got {text.strip()!r}"
        )
    return TypesLine(path, number, dict(zip(columns, values)), names[0], names[1], comment.strip())


def read_types(path: Path, columns: tuple[str, ...] = DEFAULT_COLUMNS) -> list[TypesLine]:
    """Every pose line of a types file (plain or gzipped)."""
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", errors="replace") as handle:
        parsed = (parse_line(text, path, k, columns) for k, text in enumerate(handle, start=1))
        return [line for line in parsed if line is not None]


@functools.lru_cache(maxsize=1 << 16)
def _exists(path: str) -> bool:
    # Every pose of a multi-pose file asks about the same file: one stat per file, not per line.
    return os.path.exists(path)


def forget_files() -> None:
    """Drop what ``ligand_record`` knows of which files exist (a new read sees files written since)."""
    _exists.cache_clear()


def fold_of(path: Path) -> tuple[str, int] | None:
    """("train" or "test", k) for a clustered cross-validation file ``...train<k>.types`` / ``...test<k>.types``."""
    match = FOLD_FILE.search(path.name)
    return (match.group("part"), int(match.group("fold"))) if match else None


def receptor_file(name: str, root: Path) -> Path:
    """The receptor structure a types name stands for: ``X_rec_0.gninatypes`` -> ``X_rec.pdb``."""
    if not name.endswith(".gninatypes"):
        return root / name
    stem = name[: -len(".gninatypes")]
    match = POSE_SUFFIX.match(stem)
    return root / ((match.group("stem") if match else stem) + ".pdb")


def ligand_record(name: str, root: Path) -> tuple[Path, int]:
    """(file, record index) of the pose a ligand name stands for: ``<stem>_<k>.gninatypes`` is record k of
    ``<stem>.sdf.gz`` (or ``.sdf``); failing that a one-pose file of the full name with a structure suffix; a
    structure file name is record 0 of itself, or record k of ``<stem>`` when only that file exists."""
    base_dir = str(root)
    stem, is_types = (name[: -len(".gninatypes")], True) if name.endswith(".gninatypes") else (name, False)
    if not is_types:
        suffix = next((s for s in LIGAND_FORMATS if name.endswith(s)), "")
        if not suffix or _exists(os.path.join(base_dir, name)):
            return root / name, 0
        stem = name[: -len(suffix)]
    match = POSE_SUFFIX.match(stem)
    if match:
        for suffix in LIGAND_FORMATS:
            if _exists(os.path.join(base_dir, match.group("stem") + suffix)):
                return root / (match.group("stem") + suffix), int(match.group("index"))
    for suffix in LIGAND_FORMATS:
        if _exists(os.path.join(base_dir, stem + suffix)):
            return root / (stem + suffix), 0
    base = match.group("stem") if match else stem
    return root / (base + LIGAND_FORMATS[0]), int(match.group("index")) if match else 0
