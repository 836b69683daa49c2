"""The sample index: one row type for every sample, read from CSVs or derived from the shards once.

Everything a sample needs besides its atoms (label, rmsd, score, the 5 interaction counts) lives here,
so the per-sample read path never touches HDF5 attributes. This module is the index's entry point
(``build_index``, the split); rows and CSVs are in pecan.data.index_rows, the derived index (walking the
shards, saving and finding it again) in pecan.data.index_derived.
"""

from __future__ import annotations

import dataclasses
import glob
import logging
from pathlib import Path
from typing import Any, Iterable, Optional

import numpy as np
import pandas as pd

from pecan.data import identity, layout, locations
from pecan.data.index_derived import (  # noqa: F401  (re-exported: pecan.data.index.derive_index, ...)
    derivation_key,
    derive_index,
    find_derived_index,
    index_locations,
    key_still_matches,
    write_derived_index,
)
from pecan.data.index_rows import LABEL_SOURCES, assign_labels, normalise, read_index_csv, resolve_index_csv  # noqa: F401  (re-exported: pecan.data.index.read_index_csv, ...)
from pecan.data.settings import IndexSettings
from pecan.data.validation import drop_repeated_shards, validate_index
from pecan.runtime.errors import DataError, IndexUnreadable  # noqa: F401  (re-exported)

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
            matches = sorted(p for p in path.iterdir() if p.suffix in layout.SHARD_SUFFIXES)
            if not matches:
                raise DataError(f"directory {path} holds no shard files ({', '.join(layout.SHARD_SUFFIXES)})")
            shards.extend(matches)
        elif not path.exists():
            raise DataError(f"shard file not found: {path}")
        else:
            shards.append(path)
    return [locations.absolute(p) for p in shards]


# ---------------------------------------------------------------------------- rows


def check_both_classes(index: pd.DataFrame, allow_single_class: bool, source: str = "training data") -> None:
    """A training index whose labels are all one class trains a constant: an error unless allowed."""
    classes = sorted(index["label"].dropna().unique().tolist())
    if len(classes) >= 2:
        return
    message = (
        f"{source}: every one of its {len(index)} samples has label {classes[0] if classes else '?'}; "
        "a single-class training set cannot learn to tell poses apart (check data.rmsd_threshold and "
        "data.label_source)"
    )
    if not allow_single_class:
        raise DataError(message + "; set data.allow_single_class: true to train anyway")
    log.warning("%s (allowed by data.allow_single_class)", message)


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


def log_shard_dirs(index: pd.DataFrame, what: str) -> None:
    """Name every directory the samples come from, absolute, once."""
    directories = sorted({str(Path(s).parent) for s in index["shard"].unique()})
    log.info("%s: shards from %s", what, ", ".join(directories))


# ---------------------------------------------------------------------------- one split's index


def build_index(
    csvs: list[str],
    fns: list[str],
    data_dir: str,
    settings: Optional[IndexSettings] = None,
    *,
    index_prefix: str,
    progress: bool = False,
    write_csv: bool = True,
    index_dir: str = "",
    **fields: Any,
) -> pd.DataFrame:
    """One split's index: from CSVs when readable, else from a derived CSV that still matches the shards'
    content, else derived from the shard list (and saved in the first writable location); then validated as
    a whole (pecan.data.validation). A CSV that reads but is wrong is an error, never a fallback. Poses
    without a label or rmsd are errors unless ``labels_optional`` (scoring new poses). One shard under two
    names (pecan.data.identity) is an error, or dropped under skip. ``settings``: an IndexSettings, or its
    fields given as keywords."""
    if settings is None:
        settings = IndexSettings(**fields)
    elif fields:
        raise TypeError(f"build_index: give settings or its fields, not both ({', '.join(fields)})")
    if csvs:
        try:
            return index_from_csvs(csvs, data_dir, settings)
        except IndexUnreadable as err:
            if not fns:
                raise
            log.warning("%s; deriving the index from data.train_fns/val_fns instead", err)
    patterns = fns if fns else [data_dir]
    on_bad_sample = settings.on_bad_sample
    shards = drop_repeated_shards(resolve_shards(patterns, data_dir), list(patterns), on_bad_sample)
    shards = identity.distinct_shards(shards, on_bad_sample, f"shards {list(patterns)}")
    params = dataclasses.asdict(settings)
    if write_csv:
        saved = find_derived_index(shards[0].parent, index_prefix, index_dir, shards, params)
        if saved is not None:
            try:
                index = read_index_csv(saved, data_dir, settings.rmsd_threshold, **settings.labels())
                log.info("reusing the derived index %s (its shards' content is unchanged)", saved)
                log_shard_dirs(index, f"derived index {saved}")
                return validate_index(index, str(saved), on_bad_sample, settings.labels_optional)
            except DataError as err:
                log.warning("%s; deriving the index again", err)
    key = derivation_key(shards, params) if write_csv else None
    index = derive_index(shards, settings, progress=progress)
    index = validate_index(index, f"shards {patterns}", on_bad_sample, settings.labels_optional)
    log_shard_dirs(index, f"shards {patterns}")
    if write_csv:
        write_derived_index(index, shards[0].parent, index_prefix, data_dir, index_dir, key)
    return index


def index_from_csvs(csvs: list[str], data_dir: str, settings: IndexSettings) -> pd.DataFrame:
    """The index of one split's CSVs, validated; IndexUnreadable when one cannot be read at all."""
    groups = {"pose_group": settings.pose_group, "crystal_group": settings.crystal_group}
    indexes = [read_index_csv(p, data_dir, settings.rmsd_threshold, **groups, **settings.labels()) for p in csvs]
    index = pd.concat(indexes, ignore_index=True)
    source = ", ".join(map(str, csvs))
    index = drop_duplicate_shard_rows(index, f"index CSV(s) {source}", settings.on_bad_sample)
    if not settings.use_crystal:  # rows that are neither 0 nor 1 stay, for validate_index to name
        index = index[index["is_crystal"] != 1].reset_index(drop=True)
    log_shard_dirs(index, f"index CSV(s) {source}")
    return validate_index(index, source, settings.on_bad_sample, settings.labels_optional)


# ---------------------------------------------------------------------------- splits


def split_by_complex(index: pd.DataFrame, val_fraction: float, seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Seeded complex-level split: every pose of a complex lands on the same side."""
    complexes = np.array(sorted(index["complex_id"].unique()))
    rng = np.random.default_rng(seed)
    rng.shuffle(complexes)
    n_val = int(round(len(complexes) * val_fraction))
    if val_fraction > 0 and len(complexes) > 1:
        n_val = min(max(n_val, 1), len(complexes) - 1)
    val_ids = set(complexes[:n_val])
    is_val = index["complex_id"].isin(val_ids)
    train, val = index[~is_val].reset_index(drop=True), index[is_val].reset_index(drop=True)
    val.attrs["skipped"] = 0  # the count of dropped rows belongs to the index once, not to both halves
    return train, val
