"""The sample index: one row type for every sample, read from CSVs or derived from the shards once.

Everything a sample needs besides its atoms (label, rmsd, score, the 5 interaction counts) lives here,
so the per-sample read path never touches HDF5 attributes. This module is the index's entry point:
``IndexBuilder``, built once from its IndexSettings and its sources, runs every step of a build in one order.
The steps are its helpers: rows and CSVs in pecan.data.index_rows, the derived index (walking the shards,
saving and finding it again) in pecan.data.index_derived, the checks in pecan.data.validation, soft targets
in pecan.data.targets.
"""

from __future__ import annotations

import dataclasses
import glob
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Optional, Sequence

import numpy as np
import pandas as pd

from pecan.data import identity, layout, locations, targets
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
from pecan.data.validation import drop_duplicate_shard_rows, drop_repeated_shards, validate_index
from pecan.runtime.errors import DataError, IndexUnreadable  # noqa: F401  (re-exported)

log = logging.getLogger(__name__)

# ---------------------------------------------------------------------------- the builder


@dataclass(frozen=True)
class Sources:
    """Where one split's rows come from: its index CSVs, else its shard paths and globs (relative ones against
    data_dir; none: data_dir itself); ``prefix`` names the index derived from its shards (<prefix>_all.csv)."""

    csvs: Sequence[str] = ()
    fns: Sequence[str] = ()
    prefix: str = "pecan"


@dataclass(frozen=True)
class IndexBuilder:
    """The indexes of a run, built from the builder's own settings; the one place the steps of a build are put
    in order: per split (``index``) resolve the sources, read the CSVs (labelled as they are read) or reuse or
    derive the shards' index, drop a shard reached under two names, validate; then (``splits``) the training
    index's soft targets and the validation index or split; then (``training``) the check for both classes."""

    settings: IndexSettings
    sources: Sources = Sources()
    data_dir: str = ""
    index_dir: str = ""
    val_sources: Sources = Sources()  # none named: a seeded split of ``sources`` by complex
    val_fraction: float = 0.0
    split_seed: int = 0
    target_column: str = ""
    allow_single_class: bool = False
    progress: bool = False
    write_csv: bool = True

    @classmethod
    def from_data(cls, data: Any, progress: bool = False) -> IndexBuilder:
        """The builder of a data config section's (DataConfig) training and validation indexes."""
        return cls(
            IndexSettings.from_data(data),
            Sources(data.train_csvs, data.train_fns, data.index_prefix),
            data.data_dir,
            data.index_dir,
            Sources(data.val_csvs, data.val_fns, f"{data.index_prefix}_val"),
            data.val_fraction,
            data.split_seed,
            data.target_column,
            data.allow_single_class,
            progress,
        )

    @classmethod
    def for_test(cls, data: Any, progress: bool = False) -> IndexBuilder:
        """The builder of data.test_csvs/test_fns: crystal poses are not scored, new poses need no label."""
        settings = IndexSettings.from_data(data, use_crystal=False, labels_optional=True)
        sources = Sources(data.test_csvs, data.test_fns, f"{data.index_prefix}_test")
        return cls(settings, sources, data.data_dir, data.index_dir, progress=progress)

    def training(self) -> tuple[pd.DataFrame, pd.DataFrame]:
        """``splits``, the training index checked for both classes (data.allow_single_class)."""
        train, val = self.splits()
        check_both_classes(train, self.allow_single_class)
        return train, val

    def splits(self) -> tuple[pd.DataFrame, pd.DataFrame]:
        """The training index (with data.target_column's soft targets, pecan.data.targets) and the validation
        sources' index, else a seeded complex-level split of the training index."""
        if self.target_column:
            targets.check_csvs(self.target_column, self.sources.csvs, self.data_dir)
        train = targets.attach(self.index(), self.target_column)
        if not (self.val_sources.csvs or self.val_sources.fns):
            return split_by_complex(train, self.val_fraction, self.split_seed)
        val = self.index(self.val_sources)
        warn_shared_complexes(train, val)
        return train, val

    def index(self, sources: Optional[Sources] = None) -> pd.DataFrame:
        """One split's index (``sources``, default the builder's): from CSVs when readable, else from a derived
        CSV that still matches the shards' content, else derived from the shard list (and saved in the first
        writable location); then validated as a whole (pecan.data.validation). A CSV that reads but is wrong
        is an error, never a fallback. Poses without a label or rmsd are errors unless ``labels_optional``
        (scoring new poses). One shard under two names (pecan.data.identity) is an error, or dropped under skip."""
        sources = sources or self.sources
        if sources.csvs:
            try:
                return self._from_csvs(sources.csvs)
            except IndexUnreadable as err:
                if not sources.fns:
                    raise
                log.warning("%s; deriving the index from data.train_fns/val_fns instead", err)
        return self._from_shards(sources)

    def derive(self, shards: Iterable[Path]) -> pd.DataFrame:
        """The rows of ``shards`` as derived (labelled; neither validated nor saved): a converter's own index."""
        return derive_index(shards, self.settings, progress=self.progress)

    def label(self, rows: pd.DataFrame, source: str) -> pd.DataFrame:
        """Rows made elsewhere (poses converted in memory), columns filled and labelled as this builder labels."""
        return normalise(rows, self.settings.rmsd_threshold, source, **self.settings.labels())

    def _from_csvs(self, csvs: Sequence[str]) -> pd.DataFrame:
        """The index of one split's CSVs, validated; IndexUnreadable when one cannot be read at all."""
        settings, data_dir = self.settings, self.data_dir
        groups = {"pose_group": settings.pose_group, "crystal_group": settings.crystal_group}
        indexes = [read_index_csv(p, data_dir, settings.rmsd_threshold, **groups, **settings.labels()) for p in csvs]
        index = pd.concat(indexes, ignore_index=True)
        source = ", ".join(map(str, csvs))
        index = drop_duplicate_shard_rows(index, f"index CSV(s) {source}", settings.on_bad_sample)
        if not settings.use_crystal:  # rows that are neither 0 nor 1 stay, for validate_index to name
            index = index[index["is_crystal"] != 1].reset_index(drop=True)
        log_shard_dirs(index, f"index CSV(s) {source}")
        return validate_index(index, source, settings.on_bad_sample, settings.labels_optional)

    def _from_shards(self, sources: Sources) -> pd.DataFrame:
        """The shards' index: a saved one whose key still matches, else derived, validated and saved."""
        settings, patterns = self.settings, sources.fns if sources.fns else [self.data_dir]
        shards = drop_repeated_shards(resolve_shards(patterns, self.data_dir), list(patterns), settings.on_bad_sample)
        shards = identity.distinct_shards(shards, settings.on_bad_sample, f"shards {list(patterns)}")
        params = dataclasses.asdict(settings)
        saved = self._saved(shards, sources.prefix, params) if self.write_csv else None
        if saved is not None:
            return saved
        key = derivation_key(shards, params) if self.write_csv else None
        index = derive_index(shards, settings, progress=self.progress)
        index = validate_index(index, f"shards {patterns}", settings.on_bad_sample, settings.labels_optional)
        log_shard_dirs(index, f"shards {patterns}")
        if self.write_csv:
            write_derived_index(index, shards[0].parent, sources.prefix, self.data_dir, self.index_dir, key)
        return index

    def _saved(self, shards: list[Path], prefix: str, params: dict) -> Optional[pd.DataFrame]:
        """A derived index saved for these shards and settings, validated; None when there is none, or when it
        no longer reads (it is derived again)."""
        saved = find_derived_index(shards[0].parent, prefix, self.index_dir, shards, params)
        if saved is None:
            return None
        settings = self.settings
        try:
            index = read_index_csv(saved, self.data_dir, settings.rmsd_threshold, **settings.labels())
            log.info("reusing the derived index %s (its shards' content is unchanged)", saved)
            log_shard_dirs(index, f"derived index {saved}")
            return validate_index(index, str(saved), settings.on_bad_sample, settings.labels_optional)
        except DataError as err:
            log.warning("%s; deriving the index again", err)
            return None


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
    """One split's index (IndexBuilder.index) of sources given as arguments. ``settings``: an IndexSettings, or
    its fields given as keywords."""
    if settings is None:
        settings = IndexSettings(**fields)
    elif fields:
        raise TypeError(f"build_index: give settings or its fields, not both ({', '.join(fields)})")
    sources = Sources(csvs, fns, index_prefix)
    return IndexBuilder(settings, sources, data_dir, index_dir, progress=progress, write_csv=write_csv).index()


# ---------------------------------------------------------------------------- the builder's own steps


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


def log_shard_dirs(index: pd.DataFrame, what: str) -> None:
    """Name every directory the samples come from, absolute, once."""
    directories = sorted({str(Path(s).parent) for s in index["shard"].unique()})
    log.info("%s: shards from %s", what, ", ".join(directories))


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


def warn_shared_complexes(train: pd.DataFrame, val: pd.DataFrame) -> None:
    """Complexes in both the training and the validation index make the validation figures optimistic."""
    shared = set(train["complex_id"]) & set(val["complex_id"])
    if shared:
        log.warning(
            "%d complex(es) appear in both training and validation data (e.g. %s): "
            "validation figures will be optimistic",
            len(shared),
            sorted(shared)[0],
        )
