"""The sample index: one row type for every sample, read from CSVs or derived from the shards once.

Everything a sample needs besides its atoms (label, rmsd, score, the 5 interaction counts) lives here,
so the per-sample read path never touches HDF5 attributes.
"""
from __future__ import annotations

import glob
import json
import logging
import os
from pathlib import Path
from typing import Iterable, Optional

import numpy as np
import pandas as pd

from pecan import fileio
from pecan.data import format as fmt
from pecan.data import locations
from pecan.data.sample import skip_or_raise
from pecan.data.validation import FIRST_DATA_LINE, check_csv_cells, drop_repeated_shards, validate_index

log = logging.getLogger(__name__)


from pecan.errors import DataError, IndexUnreadable  # noqa: F401  (re-exported)


# ---------------------------------------------------------------------------- paths

def resolve_shards(patterns: Iterable[str], data_dir: str = "") -> list[Path]:
    """Expand shard paths and globs (relative ones resolve against ``data_dir``); missing -> DataError.

    Paths stay as given (made absolute, symlinks kept), so derived files follow the link, not its target."""
    shards: list[Path] = []
    for pattern in patterns:
        path = Path(pattern)
        if not path.is_absolute() and data_dir:
            path = Path(data_dir) / path
        if glob.has_magic(str(path)):
            matches = sorted(Path(p) for p in glob.glob(str(path)))
            if not matches:
                raise DataError(f"shard pattern {pattern!r} matched no files (looked in {path.parent})")
            shards.extend(matches)
        elif path.is_dir():
            matches = sorted(p for p in path.iterdir() if p.suffix in fmt.SHARD_SUFFIXES)
            if not matches:
                raise DataError(f"directory {path} holds no shard files ({', '.join(fmt.SHARD_SUFFIXES)})")
            shards.extend(matches)
        elif not path.exists():
            raise DataError(f"shard file not found: {path}")
        else:
            shards.append(path)
    return [locations.absolute(p) for p in shards]


# ---------------------------------------------------------------------------- normalising rows

def _label_from(label: pd.Series, rmsd: pd.Series, threshold: float) -> pd.Series:
    derived = (rmsd < threshold).astype("float64").where(rmsd.notna())
    return label.where(label.notna(), derived)


def normalise(frame: pd.DataFrame, rmsd_threshold: float, source: str,
              labels_optional: bool = False) -> pd.DataFrame:
    """Fill optional columns, derive missing labels from rmsd, and reject rows with neither (unless
    ``labels_optional``: poses to score need no answer, their label stays empty)."""
    missing = [c for c in fmt.REQUIRED_INDEX_COLUMNS if c not in frame.columns]
    if missing:
        raise DataError(f"{source}: index is missing required column(s) {', '.join(missing)}")
    frame = frame.copy()
    for column in ("label", "rmsd", "affinity", "score"):
        if column not in frame.columns:
            frame[column] = np.nan
        frame[column] = pd.to_numeric(frame[column], errors="coerce")
    for column in fmt.INTERACTION_ATTRS:
        frame[column] = pd.to_numeric(frame[column], errors="coerce").fillna(0.0) if column in frame else 0.0
    frame["is_crystal"] = (pd.to_numeric(frame["is_crystal"], errors="coerce").fillna(0).astype(int)
                           if "is_crystal" in frame else 0)
    frame["pdbid"] = frame["pdbid"].astype(str)
    frame["poseid"] = frame["poseid"].astype(str)
    frame["label"] = _label_from(frame["label"], frame["rmsd"], rmsd_threshold)
    unlabeled = frame[frame["label"].isna()]
    if len(unlabeled) and not labels_optional:
        row = unlabeled.iloc[0]
        raise DataError(f"{source}: pose {row['pdbid']}/{row['poseid']} in shard {row['shard']} has neither a "
                        f"label nor an rmsd ({len(unlabeled)} such rows)")
    if frame["label"].notna().all() and (frame["label"] % 1 == 0).all():  # fractional labels stay as they are, for validate_index to name
        frame["label"] = frame["label"].astype(int)
    return frame


# ---------------------------------------------------------------------------- CSV

def read_index_csv(path: str | os.PathLike, data_dir: str, rmsd_threshold: float,
                   labels_optional: bool = False) -> pd.DataFrame:
    """Read one index CSV; shard paths resolve against ``data_dir`` (else the CSV's directory)."""
    path = Path(path)
    if not path.is_absolute() and data_dir and not path.exists():
        path = Path(data_dir) / path

    try:
        if path.exists() and not path.is_file():
            raise IsADirectoryError(f"[Errno 21] not a regular file: '{path}'")
        frame = pd.read_csv(path, dtype={"pdbid": str, "poseid": str, "shard": str})
    except OSError as err:
        raise IndexUnreadable(f"cannot read index CSV {path}: {err}") from err
    except (pd.errors.ParserError, UnicodeDecodeError, pd.errors.EmptyDataError) as err:
        raise DataError(f"index CSV {path} is not a valid CSV: {err}") from err
    check_csv_cells(frame, path)
    frame["_line"] = np.arange(len(frame)) + FIRST_DATA_LINE
    frame = normalise(frame, rmsd_threshold, str(path), labels_optional)
    base = Path(data_dir) if data_dir else path.parent
    frame["shard"] = [str(p if Path(p).is_absolute() else locations.absolute(os.path.normpath(base / p)))
                      for p in frame["shard"]]
    for shard in frame["shard"].unique():
        if not Path(shard).exists():
            line = int(frame.loc[frame["shard"] == shard, "_line"].iloc[0])
            raise DataError(f"index CSV {path}, line {line}, column 'shard': shard file not found: {shard}")
    return frame


def index_locations(shard_dir: Path, index_dir: str = "") -> list[locations.Location]:
    """Where a derived CSV may live, in order: data.index_dir, beside the shards, per-user cache, temp."""
    subdir = f"index/{locations.dataset_slug(shard_dir)}"
    return locations.chain(index_dir, "data.index_dir", shard_dir, subdir)


def derivation_key(shards: list[Path], params: dict) -> dict:
    """What a derived index depends on: each shard's path, size and mtime, and the derivation settings."""
    stats = [(str(s), s.stat().st_size, s.stat().st_mtime_ns) for s in shards]
    return {"shards": stats, "params": params}


def _sidecar(csv: Path) -> Path:
    return csv.with_name(csv.name + ".json")


def write_derived_index(frame: pd.DataFrame, shard_dir: Path, prefix: str, data_dir: str = "",
                        index_dir: str = "", key: Optional[dict] = None) -> Path:
    """Save a derived index (plus a sidecar naming what it was derived from) in the first writable location."""
    out = frame.copy()
    if data_dir:
        base = locations.absolute(data_dir)
        out["shard"] = [os.path.relpath(p, base) if Path(p).is_relative_to(base) else p for p in out["shard"]]

    def write(directory: Path) -> Path:
        path = directory / f"{prefix}_all.csv"
        fileio.write_csv(out, path)
        # The sidecar is written last: a CSV without a matching sidecar is never reused.
        fileio.write_text(_sidecar(path), json.dumps(key or {}))
        return path

    try:
        path, _ = locations.write_first(index_locations(shard_dir, index_dir), write, "derived index CSVs")
    except locations.NoWritableLocation as err:
        raise DataError(str(err)) from err
    log.info("derived index written to %s", path)
    return path


def find_derived_index(shard_dir: Path, prefix: str, index_dir: str, key: dict) -> Optional[Path]:
    """A derived CSV in the location chain whose sidecar matches ``key`` (same shards, same settings)."""
    for location in index_locations(shard_dir, index_dir):
        path = location.directory / f"{prefix}_all.csv"
        try:
            if json.loads(_sidecar(path).read_text()) == json.loads(json.dumps(key)):
                return path
        except (OSError, ValueError):
            continue
    return None


# ---------------------------------------------------------------------------- deriving from shards

def _pose_row(shard: Path, pdbid: str, poseid: str, group, affinity: float, is_crystal: int) -> dict:
    attrs = fmt.sample_attrs(group)
    row = {"shard": str(shard), "pdbid": pdbid, "poseid": poseid,
           "label": fmt.scalar(attrs, "label"), "rmsd": fmt.scalar(attrs, "rmsd"),
           "affinity": affinity, "score": fmt.scalar(attrs, "score"), "is_crystal": is_crystal}
    for name in fmt.INTERACTION_ATTRS:
        row[name] = fmt.scalar(attrs, name)
    if is_crystal and np.isnan(row["rmsd"]):
        row["rmsd"] = 0.0
    return row


def _complex_rows(shard: Path, pdbid: str, complex_group, pose_group: str, crystal_group: str,
                  use_crystal: bool) -> list[dict]:
    affinity = fmt.scalar(complex_group.attrs, "affinity")
    poses = complex_group.get(pose_group)
    if poses is None:
        raise DataError(f"{shard}: complex {pdbid} has no pose group '{pose_group}'")
    return [_pose_row(shard, pdbid, poseid, group, affinity, int(is_crystal))
            for poseid, is_crystal, group in fmt.complex_samples(complex_group, pose_group, crystal_group, use_crystal)]


def _shard_rows(shard: Path, pose_group: str, crystal_group: str, use_crystal: bool,
                on_bad_sample: str) -> tuple[list[dict], int]:
    """Index rows of one shard and the number of complexes skipped; any h5py/numpy failure becomes a
    DataError naming shard and complex."""
    import h5py

    try:
        handle = h5py.File(shard, "r", locking=False)
    except OSError as err:
        raise DataError(f"cannot open shard {shard} as HDF5: {err}") from err
    rows: list[dict] = []
    skipped = 0
    with handle:
        try:
            names = list(handle)
        except Exception as err:  # h5py raises KeyError/RuntimeError/OSError for a corrupt file
            raise DataError(f"shard {shard}: cannot list its complexes ({type(err).__name__}: {err})") from err
        for pdbid in names:
            try:
                rows.extend(_complex_rows(shard, pdbid, handle[pdbid], pose_group, crystal_group, use_crystal))
            except Exception as err:  # noqa: BLE001 - any failure of a corrupt complex must name it
                named = err if isinstance(err, DataError) else DataError(
                    f"shard {shard}, complex {pdbid}: unreadable ({type(err).__name__}: {err})")
                skip_or_raise(named, on_bad_sample, "skipping")
                skipped += 1
    return rows, skipped


def derive_index(shards: Iterable[Path], pose_group: str, crystal_group: str, use_crystal: bool,
                 rmsd_threshold: float, on_bad_sample: str = "error", progress: bool = False,
                 labels_optional: bool = False) -> pd.DataFrame:
    """Walk each shard once and build the index (attributes hoisted); errors name shard and complex."""
    from pecan.progress import track

    rows: list[dict] = []
    skipped = 0
    shards = list(shards)
    for shard in track(shards, "indexing shards", "shard", progress):
        try:
            shard_rows, bad_complexes = _shard_rows(shard, pose_group, crystal_group, use_crystal, on_bad_sample)
            rows.extend(shard_rows)
            skipped += bad_complexes
        except DataError as err:
            skip_or_raise(err, on_bad_sample, "skipping a whole shard")
            skipped += 1
    if skipped:
        log.warning("skipped %d shard(s) or complex(es) with a bad layout while indexing", skipped)
    if not rows:
        raise DataError(f"no samples found in {len(shards)} shard(s): {', '.join(str(s) for s in shards[:3])}")
    frame = normalise(pd.DataFrame(rows, columns=list(fmt.INDEX_COLUMNS)), rmsd_threshold,
                      f"shards under {Path(shards[0]).parent}", labels_optional)
    frame.attrs["skipped"] = skipped
    return frame


# ---------------------------------------------------------------------------- splits

def build_index(csvs: list[str], fns: list[str], data_dir: str, *, pose_group: str, crystal_group: str,
                use_crystal: bool, rmsd_threshold: float, index_prefix: str, on_bad_sample: str = "error",
                progress: bool = False, write_csv: bool = True, index_dir: str = "",
                labels_optional: bool = False) -> pd.DataFrame:
    """One split's index: from CSVs when readable, else from a derived CSV that still matches the shards,
    else derived from the shard list (and saved in the first writable location); then validated as a whole
    (pecan.data.validation). A CSV that reads but is wrong is an error, never a fallback. Poses without a
    label or rmsd are errors unless ``labels_optional`` (scoring new poses)."""
    if csvs:
        try:
            frames = [read_index_csv(p, data_dir, rmsd_threshold, labels_optional) for p in csvs]
            frame = pd.concat(frames, ignore_index=True)
            if not use_crystal:
                frame = frame[frame["is_crystal"] == 0].reset_index(drop=True)
            return validate_index(frame, ", ".join(map(str, csvs)), on_bad_sample, labels_optional)
        except IndexUnreadable as err:
            if not fns:
                raise
            log.warning("%s; deriving the index from data.train_fns/val_fns instead", err)
    patterns = fns if fns else [data_dir]
    shards = drop_repeated_shards(resolve_shards(patterns, data_dir), list(patterns), on_bad_sample)
    key = derivation_key(shards, {"pose_group": pose_group, "crystal_group": crystal_group, "use_crystal": use_crystal,
                                  "rmsd_threshold": rmsd_threshold, "on_bad_sample": on_bad_sample,
                                  "labels_optional": labels_optional})
    if write_csv:
        saved = find_derived_index(shards[0].parent, index_prefix, index_dir, key)
        if saved is not None:
            try:
                frame = read_index_csv(saved, data_dir, rmsd_threshold, labels_optional)
                log.info("reusing the derived index %s (its shards are unchanged)", saved)
                return validate_index(frame, str(saved), on_bad_sample, labels_optional)
            except DataError as err:
                log.warning("%s; deriving the index again", err)
    frame = derive_index(shards, pose_group, crystal_group, use_crystal, rmsd_threshold, on_bad_sample, progress,
                         labels_optional)
    frame = validate_index(frame, f"shards {patterns}", on_bad_sample, labels_optional)
    if write_csv:
        write_derived_index(frame, shards[0].parent, index_prefix, data_dir, index_dir, key)
    return frame


def split_by_complex(frame: pd.DataFrame, val_fraction: float, seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Seeded complex-level split: every pose of a complex lands on the same side."""
    complexes = np.array(sorted(frame["pdbid"].unique()))
    rng = np.random.default_rng(seed)
    rng.shuffle(complexes)
    n_val = int(round(len(complexes) * val_fraction))
    if val_fraction > 0 and len(complexes) > 1:
        n_val = min(max(n_val, 1), len(complexes) - 1)
    val_ids = set(complexes[:n_val])
    is_val = frame["pdbid"].isin(val_ids)
    train, val = frame[~is_val].reset_index(drop=True), frame[is_val].reset_index(drop=True)
    val.attrs["skipped"] = 0  # the count of dropped rows belongs to the index once, not to both halves
    return train, val
