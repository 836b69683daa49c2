"""Checks of an index before anything trains on it: CSV cell values (naming file, line and column), then the
index as a whole (duplicate samples, shards listed twice, labels 0/1, rmsd >= 0).

Row problems are errors, or under ``on_bad_sample: skip`` dropped with a count (``index.attrs["skipped"]``,
which the trainer reports in the log and in epochs.jsonl). Format problems of a CSV are always errors.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Iterable

import numpy as np
import pandas as pd

from pecan.data import identity, index_columns, layout, locations
from pecan.data.sample import skip_or_raise
from pecan.runtime.errors import DataError

log = logging.getLogger(__name__)

# The numeric columns of an index CSV, under the CSV's own names (the cells are checked before its rows are
# renamed to the code's names, so errors name the column as the file spells it).
NUMERIC_CSV_COLUMNS = layout.csv_names((*layout.OPTIONAL_INDEX_COLUMNS, "is_crystal", *layout.INTERACTION_ATTRS))
KEY = ["shard", "complex_id", "pose_id"]
# Cells of a numeric column read as missing (pandas' own spellings); id columns keep every cell as text.
MISSING_NUMBERS = ("", "NA", "N/A", "n/a", "NaN", "nan", "-NaN", "-nan", "null", "NULL", "None", "#N/A", "<NA>")
# A CSV's first data row is line 2 (line 1 is the header).
FIRST_DATA_LINE = 2


def check_csv_cells(index: pd.DataFrame, path: str | Path) -> None:
    """Required columns present (is_crystal and the interaction counts as pecan.data.index_columns allows),
    ids non-empty, numeric columns numeric, under the CSV's own column names; errors name file, line, column."""
    missing = [c for c in layout.REQUIRED_CSV_COLUMNS if c not in index.columns]
    if missing:
        raise DataError(
            f"index CSV {path}: missing required column(s) {', '.join(missing)} "
            f"(columns: {', '.join(map(str, index.columns))}); {missing_columns_advice(missing)}"
        )
    index_columns.check_optional_columns(index, path)
    if index.empty:
        raise DataError(f"index CSV {path}: no rows")
    for column in layout.csv_names(layout.REQUIRED_INDEX_COLUMNS):
        empty = index[column].isna() | (index[column].astype(str).str.strip() == "")
        _raise_first(index, empty, path, column, "is empty")
    for column in NUMERIC_CSV_COLUMNS:
        if column not in index.columns:
            continue
        numeric = pd.to_numeric(index[column], errors="coerce")
        _raise_first(index, numeric.isna() & index[column].notna(), path, column, "is not a number: {value!r}")


def missing_columns_advice(missing: list[str]) -> str:
    """What the missing id columns hold (the only required columns; is_crystal and the interaction counts are
    optional, pecan.data.index_columns)."""
    return (
        f"{'/'.join(missing)} locate each pose: shard is the HDF5 file holding it (relative to the CSV's folder), "
        "pdbid its complex group, poseid its pose group"
    )


def check_header(names: Iterable[str], path: str | Path) -> None:
    """A column named twice in the header: pandas would keep the first and rename the second."""
    names = [str(n).strip() for n in names]
    for name in dict.fromkeys(names):
        if names.count(name) > 1:
            raise DataError(
                f"index CSV {path}, line 1: column {name!r} appears {names.count(name)} times in the header; keep one"
            )


def _raise_first(index: pd.DataFrame, bad: pd.Series, path, column: str, problem: str) -> None:
    if not bad.any():
        return
    row = int(np.flatnonzero(bad.to_numpy())[0])
    value = _plain(index[column].iloc[row])
    raise DataError(
        f"index CSV {path}, line {row + FIRST_DATA_LINE}, column '{column}': "
        f"{problem.format(value=value)} ({int(bad.sum())} such row(s))"
    )


def _where(index: pd.DataFrame, rows: np.ndarray, source: str) -> str:
    first = index.iloc[int(rows[0])]
    line = f"line {int(first['_line'])}, " if "_line" in index.columns and not pd.isna(first["_line"]) else ""
    return f"{source}: {line}shard {first['shard']}, pose {first['complex_id']}/{first['pose_id']}"


def _plain(value):
    """A numpy scalar as the Python number it holds (for messages)."""
    return value.item() if hasattr(value, "item") else value


def validate_index(
    index: pd.DataFrame, source: str, on_bad_sample: str = "error", labels_optional: bool = False
) -> pd.DataFrame:
    """Labels 0/1 (or empty when ``labels_optional``), rmsd >= 0, no duplicate (shard, complex, pose): errors
    naming the first offender, or those rows dropped with a count under skip; logs the sample and complex
    counts."""
    label_ok = index["label"].isin([0, 1]) | (index["label"].isna() if labels_optional else False)
    checks = [
        (~label_ok, "label must be 0 or 1 (or empty, derived from rmsd)", "label"),
        (index["rmsd"].notna() & (index["rmsd"] < 0), "rmsd must be >= 0", "rmsd"),
        (~index["is_crystal"].isin([0, 1]), "is_crystal must be 0 or 1", "is_crystal"),
        *_pose_feature_checks(index),
        (
            index.duplicated(KEY, keep="first"),
            "duplicate sample (same shard, complex and pose as an earlier row)",
            None,
        ),
    ]
    drop = np.zeros(len(index), dtype=bool)
    reasons = list(index.attrs.get("skip_reasons", []))
    for bad, problem, column in checks:
        rows = np.flatnonzero(bad.to_numpy() & ~drop)
        if not len(rows):
            continue
        value = f" (got {_plain(index[column].iloc[int(rows[0])])!r})" if column else ""
        message = f"{_where(index, rows, source)}: {problem}{value}; {len(rows)} such row(s)"
        skip_or_raise(DataError(message), on_bad_sample, f"dropping {len(rows)} row(s)")
        drop[rows] = True
        reasons.append(f"{len(rows)} row(s): {problem}")
    skipped = int(index.attrs.get("skipped", 0)) + int(drop.sum())
    if drop.any():
        index = index[~drop].reset_index(drop=True)
    if index.empty:
        why = f" ({'; '.join(reasons)})" if reasons else ""
        raise DataError(f"{source}: no usable samples left after dropping {skipped} bad row(s){why}")
    index = index.drop(columns=["_line"], errors="ignore")
    index["is_crystal"] = index["is_crystal"].astype(int)
    index.attrs["skipped"] = skipped
    log.info(
        "index %s: %d samples of %d complexes%s",
        source,
        len(index),
        index["complex_id"].nunique(),
        f" ({skipped} bad row(s) dropped)" if skipped else "",
    )
    return index


def _pose_feature_checks(index: pd.DataFrame) -> list:
    """The 5 interaction counts feed the model as float32: each must stay finite after the cast and within
    +-layout.POSE_FEATURE_LIMIT (a count of bonds; 3e38 would end in a NaN loss that names no pose)."""
    checks = []
    for column in layout.INTERACTION_ATTRS:
        as_float32 = index[column].to_numpy(dtype=np.float64).astype(np.float32)
        with np.errstate(invalid="ignore"):
            bad = ~np.isfinite(as_float32) | (np.abs(as_float32) > layout.POSE_FEATURE_LIMIT)
        checks.append(
            (
                pd.Series(bad, index=index.index),
                f"{column} must be a finite count within +-{layout.POSE_FEATURE_LIMIT:g} (as float32)",
                column,
            )
        )
    return checks


def drop_repeated_shards(shards: Iterable[Path], patterns: list[str], on_bad_sample: str) -> list[Path]:
    """A shard named twice (a path plus an overlapping glob) would double its samples: error or drop."""
    seen, unique = set(), []
    for shard in shards:
        if shard in seen:
            message = f"shard {shard} is listed more than once by data.train_fns/val_fns {patterns}"
            if on_bad_sample != "skip":
                raise DataError(message + "; list each shard once")
            log.warning("%s; using it once", message)
            continue
        seen.add(shard)
        unique.append(shard)
    return unique


def drop_duplicate_shard_rows(index: pd.DataFrame, source: str, on_bad_sample: str) -> pd.DataFrame:
    """Rows of a shard reached under two names (symlink, copy, another spelling) are an error naming both,
    or under skip dropped (counted in ``attrs["skipped"]``); pecan.data.identity decides sameness."""
    # Compared as the same spelling on both sides (read_index_csv spells shard paths with locations.absolute).
    shards = [locations.absolute(s) for s in index["shard"].unique()]
    kept = {str(s) for s in identity.distinct_shards(shards, on_bad_sample, source)}
    drop = ~index["shard"].map(lambda s: str(locations.absolute(s))).isin(kept)
    if drop.any():
        skipped = int(index.attrs.get("skipped", 0)) + int(drop.sum())
        reasons = [*index.attrs.get("skip_reasons", []), f"{int(drop.sum())} row(s) of a duplicate shard name"]
        index = index[~drop].reset_index(drop=True)
        index.attrs.update(skipped=skipped, skip_reasons=reasons)
    return index
