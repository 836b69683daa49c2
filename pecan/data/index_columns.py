"""The columns an index CSV may leave out, and what stands in for them (docs/shard-format.md, "Index CSV").

- ``is_crystal``: a CSV of docked poses needs none (in FAST's layout the crystal pose lives in its own group, and
  FAST's label CSV lists docked poses only): every row is then a docked pose. A row whose pose id is a crystal
  group's name (``pdbbind``, ``crystal``) in such a CSV is an error, since it would be read as a docked pose.
- the interaction counts: all five or none. A CSV without them whose shards carry none either (FAST's own files)
  trains with every count 0, said once; a CSV without them whose shards do carry them is an error naming the
  shard and pose, since the model would read 0 for counts the data has.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pandas as pd

from pecan.data import layout
from pecan.runtime.errors import DataError

log = logging.getLogger(__name__)

COUNT_COLUMNS = layout.INTERACTION_ATTRS  # the same names in the CSV, the shards' attributes and the code


def _columns(frame: pd.DataFrame) -> str:
    return ", ".join(map(str, frame.columns))


def check_optional_columns(frame: pd.DataFrame, path: str | Path) -> None:
    """A CSV (under its own column names) with some interaction counts but not all, or without ``is_crystal``
    while a row names a crystal group as its pose, is a DataError naming the CSV and the missing column(s)."""
    present = [c for c in COUNT_COLUMNS if c in frame.columns]
    if present and len(present) < len(COUNT_COLUMNS):
        missing = [c for c in COUNT_COLUMNS if c not in frame.columns]
        raise DataError(
            f"index CSV {path}: missing required column(s) {', '.join(missing)} (columns: {_columns(frame)}); the "
            f"interaction counts ({', '.join(COUNT_COLUMNS)}) are model inputs and come all five or none: write 0 "
            "where a pose has none"
        )
    if "is_crystal" in frame.columns:
        return
    crystal = frame["poseid"].astype(str).str.strip().isin(layout.CRYSTAL_GROUP_NAMES)
    if crystal.any():
        row = int(crystal.to_numpy().nonzero()[0][0])
        raise DataError(
            f"index CSV {path}: missing required column(s) is_crystal: line {row + 2} names pose "
            f"{frame['pdbid'].iloc[row]}/{frame['poseid'].iloc[row]}, a crystal group's name ({int(crystal.sum())} "
            "such row(s)), and without is_crystal every row is a docked pose; add is_crystal (1 for crystal "
            "poses, 0 for docked)"
        )


def has_counts(frame: pd.DataFrame) -> bool:
    """Whether an index CSV's rows (either names: the counts' are the same) carry the interaction counts."""
    return all(c in frame.columns for c in COUNT_COLUMNS)


def check_shards_carry_none(index: pd.DataFrame, path: str | Path, pose_group: str, crystal_group: str) -> None:
    """For a CSV without interaction counts: the first pose it names in each of its shards must carry no count
    attribute either (else a DataError naming shard, pose and attributes); then one warning that the run
    trains with every count 0."""
    for shard, rows in index.groupby("shard", sort=False):
        carried = _counts_carried(shard, rows.iloc[0], pose_group, crystal_group)
        if carried:
            row = rows.iloc[0]
            raise DataError(
                f"index CSV {path} has no interaction-count columns, but its shard {shard} carries them (pose "
                f"{row['complex_id']}/{row['pose_id']} has {', '.join(carried)}); add the columns "
                f"{', '.join(COUNT_COLUMNS)} to the CSV, or leave data.train_csvs empty to index the shards "
                "themselves"
            )
    log.warning(
        "index CSV %s and its shards carry no interaction counts (%s), as in FAST's own files: training without "
        "them, every pose's counts are 0 (set model.use_pose_features: false to leave them out of the model)",
        path,
        ", ".join(COUNT_COLUMNS),
    )


def _counts_carried(shard: str, row: pd.Series, pose_group: str, crystal_group: str) -> list[str]:
    """The interaction-count attributes one pose of an open-able shard carries (none when it cannot be read:
    the loader names that shard where it reads it)."""
    import h5py

    where = layout.sample_path(row["complex_id"], row["pose_id"], bool(row["is_crystal"]), pose_group, crystal_group)
    try:
        with h5py.File(shard, "r", locking=False) as handle:
            group = handle.get(where)
            attrs = layout.sample_attrs(group) if group is not None else {}
    except (OSError, KeyError, RuntimeError):
        return []
    return [c for c in COUNT_COLUMNS if c in attrs]
