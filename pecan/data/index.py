"""The sample index: one row type for every sample, read from CSVs or derived from the shards once.

Everything a sample needs besides its atoms (label, rmsd, score, the 5 interaction counts) lives here,
so the per-sample read path never touches HDF5 attributes.
"""

from __future__ import annotations

import filecmp
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
from pecan.data import identity, locations
from pecan.data.sample import skip_or_raise
from pecan.data.validation import (
    FIRST_DATA_LINE,
    MISSING_NUMBERS,
    NUMERIC_COLUMNS,
    check_csv_cells,
    drop_repeated_shards,
    validate_index,
)
from pecan.errors import DataError, IndexUnreadable  # noqa: F401  (re-exported)

log = logging.getLogger(__name__)

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

LABEL_SOURCES = ("auto", "stored", "rmsd")


def _first_pose(frame: pd.DataFrame, bad: pd.Series) -> str:
    row = frame[bad].iloc[0]
    return f"pose {row['pdbid']}/{row['poseid']} in shard {row['shard']}"


def assign_labels(
    frame: pd.DataFrame, threshold: float, source: str, label_source: str = "auto", label_conflict: str = "error"
) -> pd.Series:
    """The label of every row under data.label_source: ``rmsd`` derives it from rmsd < threshold; ``stored``
    takes the stored label (rmsd fills only missing ones); ``auto`` does the same but compares both where
    both exist: a contradiction is an error, or under data.label_conflict: warn a logged count."""
    stored, rmsd = frame["label"], frame["rmsd"]
    derived = (rmsd < threshold).astype("float64").where(rmsd.notna())
    if label_source == "rmsd":
        no_rmsd = rmsd.isna() & stored.notna()
        if no_rmsd.any():
            raise DataError(
                f"{source}: {_first_pose(frame, no_rmsd)} has a label but no rmsd, and "
                f"data.label_source: rmsd derives every label from rmsd ({int(no_rmsd.sum())} such "
                "rows); use label_source: stored for these data"
            )
        return derived
    if label_source == "auto":
        # A pose exactly at the threshold is left to its stored label: producers differ on < and <=.
        conflict = stored.isin([0, 1]) & derived.notna() & (stored != derived) & (rmsd != threshold)
        if conflict.any():
            row = frame[conflict].iloc[0]
            message = (
                f"{source}: {_first_pose(frame, conflict)} has label {_plain_label(row['label'])} but rmsd "
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
    frame: pd.DataFrame,
    rmsd_threshold: float,
    source: str,
    labels_optional: bool = False,
    label_source: str = "auto",
    label_conflict: str = "error",
) -> pd.DataFrame:
    """Fill optional columns, assign labels (assign_labels), and reject rows with neither a label nor an rmsd
    (unless ``labels_optional``: poses to score need no answer, their label stays empty)."""
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
    # Kept as read (not truncated to int): validate_index requires 0 or 1.
    frame["is_crystal"] = pd.to_numeric(frame["is_crystal"], errors="coerce").fillna(0) if "is_crystal" in frame else 0
    frame["pdbid"] = frame["pdbid"].astype(str)
    frame["poseid"] = frame["poseid"].astype(str)
    frame["label"] = assign_labels(frame, rmsd_threshold, source, label_source, label_conflict)
    unlabeled = frame[frame["label"].isna()]
    if len(unlabeled) and not labels_optional:
        row = unlabeled.iloc[0]
        raise DataError(
            f"{source}: pose {row['pdbid']}/{row['poseid']} in shard {row['shard']} has neither a "
            f"label nor an rmsd ({len(unlabeled)} such rows)"
        )
    if (
        frame["label"].notna().all() and (frame["label"] % 1 == 0).all()
    ):  # fractional labels stay as they are, for validate_index to name
        frame["label"] = frame["label"].astype(int)
    return frame


def check_both_classes(frame: pd.DataFrame, allow_single_class: bool, source: str = "training data") -> None:
    """A training index whose labels are all one class trains a constant: an error unless allowed."""
    classes = sorted(frame["label"].dropna().unique().tolist())
    if len(classes) >= 2:
        return
    message = (
        f"{source}: every one of its {len(frame)} samples has label {classes[0] if classes else '?'}; "
        "a single-class training set cannot learn to tell poses apart (check data.rmsd_threshold and "
        "data.label_source)"
    )
    if not allow_single_class:
        raise DataError(message + "; set data.allow_single_class: true to train anyway")
    log.warning("%s (allowed by data.allow_single_class)", message)


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


def read_index_csv(
    path: str | os.PathLike,
    data_dir: str,
    rmsd_threshold: float,
    labels_optional: bool = False,
    label_source: str = "auto",
    label_conflict: str = "error",
) -> pd.DataFrame:
    """Read one index CSV (resolve_index_csv); shard paths resolve against ``data_dir`` (else the CSV's
    directory)."""
    path = resolve_index_csv(path, data_dir)

    try:
        if path.exists() and not path.is_file():
            raise IsADirectoryError(f"[Errno 21] not a regular file: '{path}'")
        # Ids are text whatever they spell: pandas would read a complex "NA" or a pose "None" as missing.
        frame = pd.read_csv(
            path,
            dtype={"pdbid": str, "poseid": str, "shard": str},
            keep_default_na=False,
            na_values={column: MISSING_NUMBERS for column in NUMERIC_COLUMNS},
        )
    except OSError as err:
        raise IndexUnreadable(f"cannot read index CSV {path}: {err}") from err
    except (pd.errors.ParserError, UnicodeDecodeError, pd.errors.EmptyDataError) as err:
        raise DataError(f"index CSV {path} is not a valid CSV: {err}") from err
    log.info("reading index CSV %s", path)
    check_csv_cells(frame, path)
    frame["_line"] = np.arange(len(frame)) + FIRST_DATA_LINE
    frame = normalise(frame, rmsd_threshold, str(path), labels_optional, label_source, label_conflict)
    base = Path(data_dir) if data_dir else path.parent
    frame["shard"] = [
        str(p if Path(p).is_absolute() else locations.absolute(os.path.normpath(base / p))) for p in frame["shard"]
    ]
    for shard in frame["shard"].unique():
        if not Path(shard).exists():
            line = int(frame.loc[frame["shard"] == shard, "_line"].iloc[0])
            raise DataError(f"index CSV {path}, line {line}, column 'shard': shard file not found: {shard}")
    return frame


def drop_duplicate_shard_rows(frame: pd.DataFrame, source: str, on_bad_sample: str) -> pd.DataFrame:
    """Rows of a shard reached under two names (symlink, copy, another spelling) are an error naming both,
    or under skip dropped (counted in ``attrs["skipped"]``); pecan.data.identity decides sameness."""
    shards = [Path(s) for s in frame["shard"].unique()]
    kept = {str(s) for s in identity.distinct_shards(shards, on_bad_sample, source)}
    drop = ~frame["shard"].isin(kept)
    if drop.any():
        skipped = int(frame.attrs.get("skipped", 0)) + int(drop.sum())
        frame = frame[~drop].reset_index(drop=True)
        frame.attrs["skipped"] = skipped
    return frame


def log_shard_dirs(frame: pd.DataFrame, what: str) -> None:
    """Name every directory the samples come from, absolute, once."""
    directories = sorted({str(Path(s).parent) for s in frame["shard"].unique()})
    log.info("%s: shards from %s", what, ", ".join(directories))


def index_locations(shard_dir: Path, index_dir: str = "") -> list[locations.Location]:
    """Where a derived CSV may live, in order: data.index_dir, beside the shards, per-user cache, temp."""
    subdir = f"index/{locations.dataset_slug(shard_dir)}"
    return locations.chain(index_dir, "data.index_dir", shard_dir, subdir)


def derivation_key(shards: list[Path], params: dict) -> dict:
    """What a derived index depends on: each shard's path and fingerprint (stat record and content hash,
    pecan.data.identity), taken before the shards are read, and the derivation settings."""
    return {"shards": [[str(s), identity.fingerprint(s)] for s in shards], "params": params}


def key_still_matches(saved: dict, shards: list[Path], params: dict, confirmed: Optional[Path] = None) -> bool:
    """Whether a sidecar's key describes these shards, unchanged in content, and these settings."""
    try:
        recorded = saved["shards"]
        if saved["params"] != json.loads(json.dumps(params)) or [p for p, _ in recorded] != [str(s) for s in shards]:
            return False
        return all(identity.still_matches(Path(p), fp, confirmed) for p, fp in recorded)
    except (KeyError, TypeError, ValueError):
        return False


def _sidecar(csv: Path) -> Path:
    return csv.with_name(csv.name + ".json")


def write_derived_index(
    frame: pd.DataFrame,
    shard_dir: Path,
    prefix: str,
    data_dir: str = "",
    index_dir: str = "",
    key: Optional[dict] = None,
) -> Path:
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


def find_derived_index(
    shard_dir: Path, prefix: str, index_dir: str, shards: list[Path], params: dict
) -> Optional[Path]:
    """A derived CSV in the location chain whose sidecar matches the shards (same content) and settings; a
    stale one is passed over and derived again."""
    for location in index_locations(shard_dir, index_dir):
        path = location.directory / f"{prefix}_all.csv"
        try:
            saved = json.loads(_sidecar(path).read_text())
        except (OSError, ValueError):
            continue
        if key_still_matches(saved, shards, params, identity.confirmed_path(path)):
            return path
        log.info("derived index %s is stale (a shard's content or the settings changed); passing over it", path)
    return None


# ---------------------------------------------------------------------------- deriving from shards


def _pose_row(shard: Path, pdbid: str, poseid: str, group, affinity: float, is_crystal: int) -> dict:
    attrs = fmt.sample_attrs(group)
    row = {
        "shard": str(shard),
        "pdbid": pdbid,
        "poseid": poseid,
        "label": fmt.scalar(attrs, "label"),
        "rmsd": fmt.scalar(attrs, "rmsd"),
        "affinity": affinity,
        "score": fmt.scalar(attrs, "score"),
        "is_crystal": is_crystal,
    }
    for name in fmt.INTERACTION_ATTRS:
        row[name] = fmt.scalar(attrs, name)
    if is_crystal and np.isnan(row["rmsd"]):
        row["rmsd"] = 0.0
    return row


def _complex_rows(
    shard: Path, pdbid: str, complex_group, pose_group: str, crystal_group: str, use_crystal: bool
) -> list[dict]:
    affinity = fmt.scalar(complex_group.attrs, "affinity")
    poses = complex_group.get(pose_group)
    if poses is None:
        raise DataError(f"{shard}: complex {pdbid} has no pose group '{pose_group}'")
    return [
        _pose_row(shard, pdbid, poseid, group, affinity, int(is_crystal))
        for poseid, is_crystal, group in fmt.complex_samples(complex_group, pose_group, crystal_group, use_crystal)
    ]


def _shard_rows(
    shard: Path, pose_group: str, crystal_group: str, use_crystal: bool, on_bad_sample: str
) -> tuple[list[dict], int]:
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
                named = (
                    err
                    if isinstance(err, DataError)
                    else DataError(f"shard {shard}, complex {pdbid}: unreadable ({type(err).__name__}: {err})")
                )
                skip_or_raise(named, on_bad_sample, "skipping")
                skipped += 1
    return rows, skipped


def derive_index(
    shards: Iterable[Path],
    pose_group: str,
    crystal_group: str,
    use_crystal: bool,
    rmsd_threshold: float,
    on_bad_sample: str = "error",
    progress: bool = False,
    labels_optional: bool = False,
    label_source: str = "auto",
    label_conflict: str = "error",
) -> pd.DataFrame:
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
    frame = normalise(
        pd.DataFrame(rows, columns=list(fmt.INDEX_COLUMNS)),
        rmsd_threshold,
        f"shards under {Path(shards[0]).parent}",
        labels_optional,
        label_source,
        label_conflict,
    )
    frame.attrs["skipped"] = skipped
    return frame


# ---------------------------------------------------------------------------- splits


def build_index(
    csvs: list[str],
    fns: list[str],
    data_dir: str,
    *,
    pose_group: str,
    crystal_group: str,
    use_crystal: bool,
    rmsd_threshold: float,
    index_prefix: str,
    on_bad_sample: str = "error",
    progress: bool = False,
    write_csv: bool = True,
    index_dir: str = "",
    labels_optional: bool = False,
    label_source: str = "auto",
    label_conflict: str = "error",
) -> pd.DataFrame:
    """One split's index: from CSVs when readable, else from a derived CSV that still matches the shards'
    content, else derived from the shard list (and saved in the first writable location); then validated as
    a whole (pecan.data.validation). A CSV that reads but is wrong is an error, never a fallback. Poses
    without a label or rmsd are errors unless ``labels_optional`` (scoring new poses). One shard under two
    names (pecan.data.identity) is an error, or dropped under skip."""

    labels = dict(labels_optional=labels_optional, label_source=label_source, label_conflict=label_conflict)
    if csvs:
        try:
            frames = [read_index_csv(p, data_dir, rmsd_threshold, **labels) for p in csvs]
            frame = pd.concat(frames, ignore_index=True)
            source = ", ".join(map(str, csvs))
            frame = drop_duplicate_shard_rows(frame, f"index CSV(s) {source}", on_bad_sample)
            if not use_crystal:  # rows that are neither 0 nor 1 stay, for validate_index to name
                frame = frame[frame["is_crystal"] != 1].reset_index(drop=True)
            log_shard_dirs(frame, f"index CSV(s) {source}")
            return validate_index(frame, source, on_bad_sample, labels_optional)
        except IndexUnreadable as err:
            if not fns:
                raise
            log.warning("%s; deriving the index from data.train_fns/val_fns instead", err)
    patterns = fns if fns else [data_dir]
    shards = drop_repeated_shards(resolve_shards(patterns, data_dir), list(patterns), on_bad_sample)
    shards = identity.distinct_shards(shards, on_bad_sample, f"shards {list(patterns)}")
    params = {
        "pose_group": pose_group,
        "crystal_group": crystal_group,
        "use_crystal": use_crystal,
        "rmsd_threshold": rmsd_threshold,
        "on_bad_sample": on_bad_sample,
        **labels,
    }
    if write_csv:
        saved = find_derived_index(shards[0].parent, index_prefix, index_dir, shards, params)
        if saved is not None:
            try:
                frame = read_index_csv(saved, data_dir, rmsd_threshold, **labels)
                log.info("reusing the derived index %s (its shards' content is unchanged)", saved)
                log_shard_dirs(frame, f"derived index {saved}")
                return validate_index(frame, str(saved), on_bad_sample, labels_optional)
            except DataError as err:
                log.warning("%s; deriving the index again", err)
    key = derivation_key(shards, params) if write_csv else None
    frame = derive_index(
        shards, pose_group, crystal_group, use_crystal, rmsd_threshold, on_bad_sample, progress, **labels
    )
    frame = validate_index(frame, f"shards {patterns}", on_bad_sample, labels_optional)
    log_shard_dirs(frame, f"shards {patterns}")
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
