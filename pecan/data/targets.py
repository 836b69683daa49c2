"""Soft targets (data.target_column): a per-pose probability in [0, 1] read from a column of the training
index CSVs -- a teacher's score such as GNINA's CNN pose score, or a user's own -- that training mixes into the
BCE target (train.target_mix) and that the teacher-ordered ranking losses and the fit check read.

The rules (docs/distillation.md):

- the column must be in every training CSV (data.train_csvs; an index derived from the shards has no such
  column), and must not be one PECAN reads itself (shard, pdbid, poseid, label, rmsd, ...);
- a docked pose's cell is a number in [0, 1]; an empty (or NA) cell, a non-number or a value outside [0, 1] is an
  error naming the CSV, the line and the pose;
- a crystal pose (is_crystal 1) has no teacher's score: its cell may be empty, and whatever it holds is not read.
  Its soft target is NaN here, which the BCE target reads as the pose's label (1): the crystal pose is the native
  pose by definition, so the label is the right answer for it, while a teacher's score of it would be a
  judgement of a pose the teacher never docked. The teacher-ordered ranking losses and the fit check leave it out
  (it has no place in the teacher's order).

The values travel as the index column ``TARGET`` (float, NaN for crystal poses) into the sample table
(``pecan.data.sample.SampleTable.target``), from which the loss takes them by sample id: both readers carry
them with no file access per sample.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Iterable

import numpy as np
import pandas as pd

from pecan.data import layout
from pecan.data.index_rows import resolve_index_csv
from pecan.data.sample import TARGET
from pecan.data.validation import FIRST_DATA_LINE, MISSING_NUMBERS
from pecan.runtime.errors import ConfigError, DataError

RESERVED = (*layout.csv_names(layout.INDEX_COLUMNS), *layout.INDEX_COLUMNS, TARGET)


def check_setting(column: str, train_csvs: list[str]) -> None:
    """data.target_column names a column of its own of the training CSVs: a ConfigError otherwise."""
    if column in RESERVED:
        raise ConfigError(
            f"data.target_column: {column!r} is a column PECAN reads itself; name the CSV column holding the "
            "teacher's (or your own) probability of each pose"
        )
    if not train_csvs:
        raise ConfigError(
            f"data.target_column: {column!r} is read from the training index CSVs, and data.train_csvs is empty "
            "(an index derived from the shards has no such column); write an index CSV with the column"
        )


def check_csv(path: str | os.PathLike, data_dir: str, column: str) -> None:
    """One training CSV's target column: present, and a number in [0, 1] on every docked pose's line (a
    crystal pose's cell is not read); else a DataError naming the CSV, the line and the pose."""
    path = resolve_index_csv(path, data_dir)
    try:
        cells = pd.read_csv(path, dtype=str, keep_default_na=False)
    except (OSError, pd.errors.ParserError, UnicodeDecodeError, pd.errors.EmptyDataError):
        return  # the index reader names what is wrong with the file itself
    if column not in cells.columns:
        raise DataError(
            f"index CSV {path}: missing column {column!r} named by data.target_column "
            f"(columns: {', '.join(map(str, cells.columns))})"
        )
    text = cells[column].str.strip()
    crystal = pd.to_numeric(cells.get("is_crystal", pd.Series("0", index=cells.index)), errors="coerce") == 1
    value = pd.to_numeric(text.where(~text.isin(MISSING_NUMBERS)), errors="coerce")
    problems = (
        (text.isin(MISSING_NUMBERS), "is empty; every docked pose needs the teacher's probability"),
        (value.isna() & ~text.isin(MISSING_NUMBERS), "is not a number"),
        (value.notna() & ~value.between(0.0, 1.0), "is outside [0, 1] (a probability, e.g. GNINA's CNNscore)"),
    )
    for bad, problem in problems:
        _raise_first(cells, bad & ~crystal, path, column, problem)


def _raise_first(cells: pd.DataFrame, bad: pd.Series, path: Path, column: str, problem: str) -> None:
    if not bad.any():
        return
    row = int(np.flatnonzero(bad.to_numpy())[0])
    pose = f"{cells['pdbid'].iloc[row]}/{cells['poseid'].iloc[row]}" if "poseid" in cells else "?"
    raise DataError(
        f"index CSV {path}, line {row + FIRST_DATA_LINE}, column {column!r} (data.target_column), pose {pose}: "
        f"{cells[column].iloc[row]!r} {problem} ({int(bad.sum())} such row(s))"
    )


def check_csvs(column: str, csvs: Iterable[str], data_dir: str) -> None:
    """``check_setting`` and ``check_csv`` of every training CSV, before the index is built."""
    csvs = list(csvs)
    check_setting(column, csvs)
    for path in csvs:
        check_csv(path, data_dir, column)


def attach(index: pd.DataFrame, column: str) -> pd.DataFrame:
    """The index with ``TARGET``: the column's values as floats, NaN on crystal poses; without a column (""),
    the index without ``TARGET`` (a CSV column of that name is never read as a target unasked)."""
    index = index.drop(columns=[TARGET], errors="ignore")
    if not column:
        return index
    if column not in index.columns:  # e.g. an unreadable CSV replaced by the shards' own index
        raise DataError(f"the training index has no column {column!r} (data.target_column)")
    cells = index[column].map(lambda v: v.strip() if isinstance(v, str) else v)
    values = pd.to_numeric(cells, errors="coerce").astype(float)
    crystal = index["is_crystal"].to_numpy() == 1
    unread = values.isna().to_numpy() & ~crystal  # check_csv names these by line; this is the last guard
    if unread.any():
        row = index.iloc[int(np.flatnonzero(unread)[0])]
        raise DataError(
            f"shard {row['shard']}, pose {row['complex_id']}/{row['pose_id']}: no number in column {column!r} "
            f"(data.target_column) for a docked pose ({int(unread.sum())} such row(s))"
        )
    return index.assign(**{TARGET: values.where(~crystal)})
