"""Index rows: labels under data.label_source, optional columns filled, and rows read from an index CSV
(found in data_dir or the working directory, read strictly, its shards resolved) or written to one. Derived
rows (pecan.data.index_derived) are normalised here too.

Index CSVs are read here (``read_index_csv``, ``read_index_rows``) and written by ``layout.write_index_csv``.
Three of their columns go by the shard format's names on disk and by the code's (``complex_id``, ``pose_id``,
``docking_score``) in memory (``layout.INDEX_CSV_NAMES``), translated by ``layout.from_csv_names`` and
``layout.to_csv_names`` and nowhere else."""

from __future__ import annotations

import filecmp
import logging
import os
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from pecan.data import index_columns, layout, locations
from pecan.data.validation import FIRST_DATA_LINE, MISSING_NUMBERS, NUMERIC_CSV_COLUMNS, check_csv_cells, check_header
from pecan.runtime.errors import DataError, IndexUnreadable

log = logging.getLogger(__name__)

# ---------------------------------------------------------------------------- normalising rows

LABEL_SOURCES = ("auto", "stored", "rmsd")


def _first_pose(index: pd.DataFrame, bad: pd.Series) -> str:
    row = index[bad].iloc[0]
    return f"pose {row['complex_id']}/{row['pose_id']} in shard {row['shard']}"


def assign_labels(
    index: pd.DataFrame, threshold: float, source: str, label_source: str = "auto", label_conflict: str = "error"
) -> pd.Series:
    """The label of every row under data.label_source: ``rmsd`` derives it from rmsd < threshold; ``stored``
    takes the stored label (rmsd fills only missing ones); ``auto`` does the same but compares both where
    both exist: a contradiction is an error, or under data.label_conflict: warn a logged count."""
    stored, rmsd = index["label"], index["rmsd"]
    derived = (rmsd < threshold).astype("float64").where(rmsd.notna())
    if label_source == "rmsd":
        no_rmsd = rmsd.isna() & stored.notna()
        if no_rmsd.any():
            raise DataError(
                f"{source}: {_first_pose(index, no_rmsd)} has a label but no rmsd, and "
                f"data.label_source: rmsd derives every label from rmsd ({int(no_rmsd.sum())} such "
                "rows); use label_source: stored for these data"
            )
        return derived
    if label_source == "auto":
        # A pose exactly at the threshold is left to its stored label: producers differ on < and <=.
        conflict = stored.isin([0, 1]) & derived.notna() & (stored != derived) & (rmsd != threshold)
        if conflict.any():
            row = index[conflict].iloc[0]
            message = (
                f"{source}: {_first_pose(index, conflict)} has label {_plain_label(row['label'])} but rmsd "
                f"{row['rmsd']:g} (data.rmsd_threshold {threshold:g} says {int(row['rmsd'] < threshold)}); "
                f"{int(conflict.sum())} of {int(derived.notna().sum())} labelled rows contradict their rmsd"
            )
            if label_conflict != "warn":
                raise DataError(
                    message + "; set data.label_source to stored or rmsd to choose one, or "
                    "data.label_conflict: warn to train on the stored labels"
                )
            log.warning("%s; training on the stored labels (data.label_conflict: warn)", message)
    return stored.where(stored.notna(), derived)


def _plain_label(value) -> str:
    return f"{value:g}" if isinstance(value, float) else str(value)


def normalise(
    index: pd.DataFrame,
    rmsd_threshold: float,
    source: str,
    labels_optional: bool = False,
    label_source: str = "auto",
    label_conflict: str = "error",
) -> pd.DataFrame:
    """Fill optional columns, assign labels (assign_labels), and reject rows with neither a label nor an rmsd
    (unless ``labels_optional``: poses to score need no answer, their label stays empty)."""
    missing = [c for c in layout.REQUIRED_INDEX_COLUMNS if c not in index.columns]
    if missing:
        raise DataError(f"{source}: index is missing required column(s) {', '.join(missing)}")
    index = index.copy()
    for column in layout.OPTIONAL_INDEX_COLUMNS:
        if column not in index.columns:
            index[column] = np.nan
        index[column] = pd.to_numeric(index[column], errors="coerce")
    for column in layout.INTERACTION_ATTRS:
        index[column] = pd.to_numeric(index[column], errors="coerce").fillna(0.0) if column in index else 0.0
    # Kept as read (not truncated to int): validate_index requires 0 or 1.
    index["is_crystal"] = pd.to_numeric(index["is_crystal"], errors="coerce").fillna(0) if "is_crystal" in index else 0
    index["complex_id"] = index["complex_id"].astype(str)
    index["pose_id"] = index["pose_id"].astype(str)
    index["label"] = assign_labels(index, rmsd_threshold, source, label_source, label_conflict)
    unlabeled = index[index["label"].isna()]
    if len(unlabeled) and not labels_optional:
        row = unlabeled.iloc[0]
        raise DataError(
            f"{source}: pose {row['complex_id']}/{row['pose_id']} in shard {row['shard']} has neither a "
            f"label nor an rmsd ({len(unlabeled)} such rows)"
        )
    if (
        index["label"].notna().all() and (index["label"] % 1 == 0).all()
    ):  # fractional labels stay as they are, for validate_index to name
        index["label"] = index["label"].astype(int)
    return index


# ---------------------------------------------------------------------------- CSV


def _same_file_or_bytes(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b) or filecmp.cmp(a, b, shallow=False)
    except OSError:
        return False


def resolve_index_csv(path: str | os.PathLike, data_dir: str) -> Path:
    """Where a CSV named in the config is: absolute as given; a relative one in data_dir first, else in the
    working directory. Found in both places and different is an error naming both (never a silent pick)."""
    path = Path(path)
    if path.is_absolute() or not data_dir:
        return locations.absolute(path)
    in_data, here = locations.absolute(Path(data_dir) / path), locations.absolute(path)
    if not in_data.exists():
        return here if here.exists() else in_data  # missing from both: named where it was looked for first
    if here.exists() and here != in_data and not _same_file_or_bytes(in_data, here):
        raise DataError(
            f"index CSV {str(path)!r} is ambiguous: {in_data} (in data.data_dir) and {here} (in the "
            "working directory) both exist and differ; relative CSV paths resolve against data_dir, "
            "so give the other one as an absolute path, or remove one"
        )
    return in_data


def shard_path(base: Path, name: str) -> str:
    """A CSV's shard name as the one absolute path of the file the OS opens for it (relative names resolve
    against ``base``; ``lnk/..`` against lnk's target: locations.absolute)."""
    return str(locations.absolute(base / name))


def _read_cells(path: Path) -> pd.DataFrame:
    # Ids are text whatever they spell: pandas would read a complex "NA" or a pose "None" as missing.
    return pd.read_csv(
        path,
        dtype={column: str for column in layout.csv_names(layout.REQUIRED_INDEX_COLUMNS)},
        keep_default_na=False,
        na_values={column: MISSING_NUMBERS for column in NUMERIC_CSV_COLUMNS},
    )


def read_index_rows(path: str | os.PathLike) -> pd.DataFrame:
    """An index CSV's rows as written, under the names code uses: ids as text, an empty or NA number
    missing, no check, label or shard resolved (for tools that regroup index CSVs; training and scoring read
    them with read_index_csv)."""
    return layout.from_csv_names(_read_cells(Path(path)), path)


def read_index_csv(
    path: str | os.PathLike,
    data_dir: str,
    rmsd_threshold: float,
    pose_group: str = layout.DEFAULT_POSE_GROUP,
    crystal_group: str = layout.DEFAULT_CRYSTAL_GROUP,
    **labels: Any,
) -> pd.DataFrame:
    """Read one index CSV (resolve_index_csv); shard paths resolve against ``data_dir`` (else the CSV's
    directory). ``labels``: normalise's keywords that decide labels (labels_optional, label_source,
    label_conflict). The CSV's cells are checked under its own column names, the rows returned under the
    names code uses. A CSV without interaction counts is checked against its shards' poses (in
    ``pose_group``/``crystal_group``): pecan.data.index_columns."""
    path = resolve_index_csv(path, data_dir)

    try:
        if path.exists() and not path.is_file():
            raise IsADirectoryError(f"[Errno 21] not a regular file: '{path}'")
        index = _read_cells(path)
        check_header(pd.read_csv(path, header=None, nrows=1, dtype=str, keep_default_na=False).iloc[0], path)
    except OSError as err:
        raise IndexUnreadable(f"cannot read index CSV {path}: {err}") from err
    except (pd.errors.ParserError, UnicodeDecodeError, pd.errors.EmptyDataError) as err:
        raise DataError(f"index CSV {path} is not a valid CSV: {err}") from err
    log.info("reading index CSV %s", path)
    check_csv_cells(index, path)
    with_counts = index_columns.has_counts(index)
    index = layout.from_csv_names(index, path)
    index["_line"] = np.arange(len(index)) + FIRST_DATA_LINE
    index = normalise(index, rmsd_threshold, str(path), **labels)
    base = Path(data_dir) if data_dir else path.parent
    # One spelling per shard, once, here: ``dir//shard_0.hdf5``, ``dir/./shard_0.hdf5`` and ``shard_0.hdf5``
    # are one path for every later comparison (duplicates, packs, the sampler); two spellings of one file
    # that remain (a symlink) are found by pecan.data.identity from the file itself.
    index["shard"] = [shard_path(base, p) for p in index["shard"]]
    for shard in index["shard"].unique():
        if not Path(shard).exists():
            line = int(index.loc[index["shard"] == shard, "_line"].iloc[0])
            raise DataError(f"index CSV {path}, line {line}, column 'shard': shard file not found: {shard}")
    if not with_counts:
        index_columns.check_shards_carry_none(index, path, pose_group, crystal_group)
    return index
