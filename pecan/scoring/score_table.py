"""Docking scores from a CSV, for poses whose files carry none (mol2, PDB) or another one:
`pecan score ... --scores-csv scores.csv --score-column NAME`.

One row per pose. The pose is found by ``record`` (its record's number in its poses file, from 1) or, when the
CSV has no ``record`` column, by ``title`` (its record's title, stripped, unique per file); a ``file`` column
(the poses file's name, e.g. ``docked.mol2``) is needed when more than one poses file is scored (a ``--poses``
directory, a manifest). ``--score-column`` (default ``docking_score``) holds the score, lower = better. Each
scored pose gets its score as the property the model reads (``--score-property`` or the checkpoint's),
replacing one its record has; a pose without a row stops the run (exit 2) naming its file, record and title.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from pecan.runtime.errors import ConfigError
from pecan.runtime.numbers import number_or_none

DEFAULT_COLUMN = "docking_score"
KEYS = ("record", "title")


@dataclass(frozen=True)
class ScoreTable:
    """The scores of a ``--scores-csv``: (file name or '', record number or title) -> score."""

    path: Path
    column: str
    key: str  # "record" or "title"
    by_file: bool
    scores: dict

    @classmethod
    def read(cls, path: Path, column: Optional[str]) -> "ScoreTable":
        """Read and check the CSV: the columns, a number in every score cell, each pose once."""
        column = column or DEFAULT_COLUMN
        try:
            with open(path, newline="", encoding="utf-8-sig") as handle:
                rows = list(csv.reader(handle))
        except (OSError, UnicodeDecodeError, csv.Error) as err:
            raise ConfigError(f"pecan score: --scores-csv {path} cannot be read: {err}") from err
        header = [name.strip() for name in rows[0]] if rows else []
        key = next((name for name in KEYS if name in header), None)
        if column not in header or key is None:
            raise ConfigError(
                f"pecan score: --scores-csv {path} needs the score column {column!r} (--score-column) and a "
                f"'record' or 'title' column naming the pose; its columns: {', '.join(header) or '(none)'}"
            )
        at = {name: header.index(name) for name in (column, key, "file") if name in header}
        scores: dict = {}
        for line, row in enumerate(rows[1:], start=2):
            if not any(cell.strip() for cell in row):
                continue
            cells = {name: (row[i].strip() if i < len(row) else "") for name, i in at.items()}
            pose = (Path(cells.get("file", "")).name, _key_value(cells[key], key, path, line))
            if pose in scores:
                raise ConfigError(f"pecan score: --scores-csv {path} line {line}: {key} {pose[1]!r} appears twice")
            scores[pose] = _score_value(cells[column], column, path, line)
        return cls(path, column, key, "file" in header, scores)

    def score(self, poses_file: Path, number: int, title: str) -> float:
        """The score of record ``number`` (titled ``title``) of ``poses_file``; ConfigError when it has no row."""
        pose = (poses_file.name if self.by_file else "", number if self.key == "record" else title)
        if pose not in self.scores:
            raise ConfigError(
                f"pecan score: --scores-csv {self.path} has no {self.key} {pose[1]!r}"
                f"{f' of file {pose[0]}' if self.by_file else ''}: record {number} (title {title!r}) of "
                f"{poses_file} has no docking score"
            )
        return self.scores[pose]

    def apply(self, mol, poses_file: Path, number: int, title: str, score_property: str) -> None:
        """Set the pose's score as ``score_property`` on ``mol`` (nothing for a record RDKit could not parse)."""
        if mol is not None:
            mol.SetProp(score_property, repr(self.score(poses_file, number, title)))


def _key_value(text: str, key: str, path: Path, line: int):
    if key == "title":
        return text
    try:
        number = int(text)
    except ValueError:
        number = 0
    if number < 1:
        raise ConfigError(f"pecan score: --scores-csv {path} line {line}: record {text!r} is not a number from 1")
    return number


def _score_value(text: str, column: str, path: Path, line: int) -> float:
    """A score cell read as a docking score is (``pecan.runtime.numbers``: one finite number, any dash a minus)."""
    value = number_or_none(text)
    if value is None:
        raise ConfigError(f"pecan score: --scores-csv {path} line {line}: {column} {text!r} is not a number")
    return value
