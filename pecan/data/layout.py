"""Shard layout (LLNL FAST/PECAN ML-HDF): group names, columns, attribute names, the walk over a shard's
samples, and the one shard writer (used by the converter and the synthetic generator); the index CSV's
column names, their translation to the names code uses, and the one index CSV writer."""

from __future__ import annotations

import io
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, Optional

import numpy as np

from pecan.data import schema

if TYPE_CHECKING:
    import pandas as pd

N_COLUMNS = 22
COORD_COLUMNS = slice(0, 3)
FEATURE_COLUMNS = slice(3, 22)
# The feature columns are the model's atom features (pecan.data.schema): their count and meanings live there.
N_FEATURES = schema.N_ATOM_FEATURES
MOLCODE_FEATURE = schema.MOLCODE_FEATURE
MOLCODE_COLUMN = FEATURE_COLUMNS.start + MOLCODE_FEATURE

# Per-atom van der Waals radius (float32 [n_atoms], same row order as `data`), written by FAST on every
# pose and crystal group; derived from the element one-hot when a shard lacks it.
VDW_ATTR = "van_der_waals"
ELEMENT_FEATURES, VDW_RADII, VDW_DEFAULT = schema.ELEMENT_FEATURES, schema.VDW_RADII, schema.VDW_DEFAULT

DATASET_NAME = "data"
DEFAULT_POSE_GROUP = "pybel/processed/docking"
DEFAULT_CRYSTAL_GROUP = "pybel/processed/pdbbind"
# PECAN files name the crystal group "crystal", FAST files "pdbbind"; both are accepted.
CRYSTAL_GROUP_NAMES = ("pdbbind", "crystal")

INTERACTION_ATTRS = schema.POSE_FEATURES
# Largest magnitude accepted for an interaction count (hydrogen bonds, contacts, ... of one pose).
POSE_FEATURE_LIMIT = 1e4
POSE_ATTRS = ("rmsd", "score", "label") + INTERACTION_ATTRS

# The index's columns as code names them. The index CSV (the shard format's, LLNL FAST compatible: see
# docs/shard-format.md) names three of them otherwise: from_csv_names and to_csv_names below translate
# between the two where index CSVs are read (pecan.data.index_rows) and written (write_index_csv), and
# nothing else does.
REQUIRED_INDEX_COLUMNS = ("shard", "complex_id", "pose_id")
OPTIONAL_INDEX_COLUMNS = ("label", "rmsd", "affinity", "docking_score")
INDEX_COLUMNS = (*REQUIRED_INDEX_COLUMNS, *OPTIONAL_INDEX_COLUMNS, *INTERACTION_ATTRS, "is_crystal")
INDEX_CSV_NAMES = {"complex_id": "pdbid", "pose_id": "poseid", "docking_score": "score"}


def csv_names(columns) -> tuple[str, ...]:
    """The index CSV's names of index columns (unchanged where the CSV and the code agree)."""
    return tuple(INDEX_CSV_NAMES.get(c, c) for c in columns)


INDEX_CSV_COLUMNS = csv_names(INDEX_COLUMNS)
# The columns every index CSV has. is_crystal and the interaction counts may be left out only as
# pecan.data.index_columns allows (a CSV of docked poses; counts that the shards do not carry either).
REQUIRED_CSV_COLUMNS = csv_names(REQUIRED_INDEX_COLUMNS)


def from_csv_names(rows: pd.DataFrame, source: str | Path) -> pd.DataFrame:
    """An index CSV's rows (a DataFrame) under the names code uses. A CSV that also has a column under the
    code's name keeps one copy when both hold the same cells; when they differ it is a DataError naming both
    (never a silent pick)."""
    renames = {csv: code for code, csv in INDEX_CSV_NAMES.items() if csv in rows.columns}
    for csv, code in renames.items():
        if code not in rows.columns:
            continue
        if not rows[code].astype(str).equals(rows[csv].astype(str)):
            from pecan.runtime.errors import DataError

            raise DataError(
                f"index CSV {source}: columns {csv!r} and {code!r} differ, but {code!r} is what PECAN calls the "
                f"index CSV's {csv!r} column; drop or rename one"
            )
        rows = rows.drop(columns=[code])
    return rows.rename(columns=renames)


def to_csv_names(index: pd.DataFrame) -> pd.DataFrame:
    """An index (a DataFrame) under the index CSV's column names, to write."""
    return index.rename(columns=INDEX_CSV_NAMES)


def write_index_csv(index: pd.DataFrame | Iterable[dict], path: str | Path) -> Path:
    """Write an index (a DataFrame, or rows of the code's columns) as an index CSV, atomically: the one writer
    of index CSVs (the converter, the derived index, the synthetic generator, the benchmarks)."""
    import pandas as pd

    from pecan.runtime.fileio import write_csv

    frame = index if isinstance(index, pd.DataFrame) else pd.DataFrame(list(index), columns=list(INDEX_COLUMNS))
    return write_csv(to_csv_names(frame), path)


SHARD_SUFFIXES = (".hdf5", ".hdf", ".h5")


def crystal_candidates(crystal_group: str) -> list[str]:
    """Crystal group paths to try: the configured one, then its sibling under the other accepted name."""
    parent, _, name = crystal_group.rpartition("/")
    paths = [crystal_group]
    for other in CRYSTAL_GROUP_NAMES:
        if other != name:
            paths.append(f"{parent}/{other}" if parent else other)
    return paths


def sample_path(complex_id: str, pose_id: str, is_crystal: bool, pose_group: str, crystal_group: str) -> str:
    """HDF5 path of the group that holds one sample's ``data`` dataset.

    Crystal rows carry the crystal group's own name as pose_id, so the path is derivable without a lookup.
    """
    if is_crystal:
        parent = crystal_group.rpartition("/")[0]
        return f"{complex_id}/{parent}/{pose_id}" if parent else f"{complex_id}/{pose_id}"
    return f"{complex_id}/{pose_group}/{pose_id}"


def element_vdw(features: np.ndarray) -> np.ndarray:
    """Van der Waals radius per atom from the element one-hot of the 19 feature columns (float32 [n])."""
    elements = features[:, ELEMENT_FEATURES].astype(np.float32)
    known = np.minimum(elements.sum(axis=1), 1.0)
    return (elements @ np.asarray(VDW_RADII, dtype=np.float32) + (1.0 - known) * VDW_DEFAULT).astype(np.float32)


def feature_layout() -> dict:
    """What a model's inputs mean (recorded in checkpoints; a model trained on another layout cannot score)."""
    return {"n_features": N_FEATURES, "molcode_feature": MOLCODE_FEATURE, "pose_features": list(INTERACTION_ATTRS)}


# ---------------------------------------------------------------------------- walking a shard
# The one walk over a complex's samples and the one reading of scalar attributes, shared by indexing
# (pecan.data.index) and packing (pecan.data.packing).


def complex_samples(complex_group, pose_group: str, crystal_group: str, use_crystal: bool = True):
    """Yield (pose_id, is_crystal, group) for every docked pose of an open complex group, then its crystal
    pose (the configured group or its sibling name) when ``use_crystal``. A complex without the pose group
    yields only its crystal; callers decide whether that is an error."""
    poses = complex_group.get(pose_group)
    for pose_id in poses if poses is not None else ():
        yield pose_id, False, poses[pose_id]
    if use_crystal:
        for candidate in crystal_candidates(crystal_group):
            group = complex_group.get(candidate)
            if group is not None:
                yield candidate.rpartition("/")[2], True, group
                return


def sample_attrs(group) -> dict:
    """A pose group's attributes; some producers put them on the ``data`` dataset instead (group wins)."""
    attrs = dict(group.attrs)
    dataset = group.get(DATASET_NAME)
    if dataset is not None and hasattr(dataset, "attrs"):
        attrs = {**dict(dataset.attrs), **attrs}
    return attrs


def scalar(attrs, name: str, where: str = "") -> float:
    """A scalar attribute as a float (its first element), NaN when absent; a value that is not a number
    (``label = "yes"``) is a DataError naming ``where`` (shard and pose) and the attribute."""
    value = attrs.get(name)
    if value is None:
        return np.nan
    if isinstance(value, (float, int)):  # a Python number (pecan score's in-memory samples): no array round trip
        return float(value)
    try:
        return float(np.asarray(value).reshape(-1)[0])
    except (TypeError, ValueError, IndexError):
        from pecan.runtime.errors import DataError

        if np.asarray(value).size == 0:
            raise DataError(f"{where or 'a pose'}: attribute {name!r} is empty, not a number") from None
        shown = value.decode(errors="replace") if isinstance(value, bytes) else value
        raise DataError(f"{where or 'a pose'}: attribute {name!r} is {shown!r}, not a number") from None


# HDF5 filters of the common plugins (hdf5plugin), named in the error for a shard this HDF5 cannot decode.
PLUGIN_FILTERS = {307: "bzip2", 32001: "Blosc", 32004: "LZ4", 32008: "bitshuffle", 32015: "Zstandard", 32026: "Blosc2"}


def read_data(dataset, where: str) -> np.ndarray:
    """A pose's ``data`` array; a dataset compressed with a filter this h5py/HDF5 lacks (Blosc, LZ4, ...)
    is a DataError naming ``where``, the dataset and the filter instead of HDF5's plugin-path message."""
    try:
        return dataset[()]
    except OSError as err:
        missing = _missing_filters(dataset)
        if not missing:
            raise
        from pecan.runtime.errors import DataError

        raise DataError(
            f"{where}: dataset '{dataset.name}' is compressed with the HDF5 filter {', '.join(missing)}, which "
            "this h5py/HDF5 cannot decode; install and import hdf5plugin, or rewrite the shard with gzip or lzf"
        ) from err


def _missing_filters(dataset) -> list[str]:
    import h5py

    try:
        plist = dataset.id.get_create_plist()
        ids = [plist.get_filter(k)[0] for k in range(plist.get_nfilters())]
    except Exception:  # noqa: BLE001 - no filter information: HDF5's own message stands
        return []
    return [f"{PLUGIN_FILTERS.get(i, 'id')} ({i})" for i in ids if not h5py.h5z.filter_avail(i)]


# ---------------------------------------------------------------------------- writing a shard
# The one writer of the layout above, shared by pecan.convert and pecan.synthetic; h5py is imported only here,
# when a shard is written, so that the config (which reads the constants above) never loads it.


@dataclass
class ShardSample:
    """One pose (or crystal pose) to write: its [n_atoms, 22] rows, its attributes and, when known, the
    per-atom van der Waals radii (written as the ``van_der_waals`` attribute, as FAST does)."""

    name: str
    atoms: np.ndarray
    attrs: dict = field(default_factory=dict)
    vdw: Optional[np.ndarray] = None


@dataclass
class ShardComplex:
    """One complex to write: its docked poses, its crystal pose if any, and its affinity (NaN: none)."""

    complex_id: str
    poses: list[ShardSample]
    crystal: Optional[ShardSample] = None
    affinity: float = math.nan


def _write_sample(parent, name: str, sample: ShardSample, compression: Optional[str]) -> None:
    group = parent.create_group(name)
    group.create_dataset(DATASET_NAME, data=np.asarray(sample.atoms, dtype=np.float32), compression=compression)
    if sample.vdw is not None:
        group.attrs[VDW_ATTR] = np.asarray(sample.vdw, dtype=np.float32)  # on the pose group, as FAST writes it
    for key, value in sample.attrs.items():
        group.attrs[key] = value


def write_shard(
    path: str | Path,
    complexes: Iterable[ShardComplex],
    pose_group: str = DEFAULT_POSE_GROUP,
    crystal_group: str = DEFAULT_CRYSTAL_GROUP,
    compression: Optional[str] = None,
    attrs: Optional[dict] = None,
    in_memory: bool = False,
) -> None:
    """Write ``complexes`` as one shard in this layout, atomically (a temp file beside ``path``, then renamed).
    The crystal pose goes to ``crystal_group`` under its complex, whatever its sample's name; ``attrs`` become
    attributes of the file's root (the converter's ``source`` and ``score_properties``). ``in_memory`` builds
    the file in memory and writes its bytes at once: HDF5 crashes the process (SIGSEGV) when the disk fills
    under it, a plain write raises ENOSPC (a StorageError naming ``path``)."""
    import h5py

    from pecan.runtime.fileio import atomic_path, atomic_write

    if not in_memory:
        with atomic_path(Path(path)) as temporary, h5py.File(temporary, "w") as h5:
            _fill_shard(h5, complexes, pose_group, crystal_group, compression, attrs)
        return
    image = io.BytesIO()
    with h5py.File(image, "w") as h5:
        _fill_shard(h5, complexes, pose_group, crystal_group, compression, attrs)
    with atomic_write(Path(path)) as out:
        out.write(image.getbuffer())


def _fill_shard(h5, complexes, pose_group, crystal_group, compression, attrs) -> None:
    h5.attrs.update(attrs or {})
    for item in complexes:
        group = h5.create_group(item.complex_id)
        if not math.isnan(item.affinity):
            group.attrs["affinity"] = item.affinity
        docking = group.create_group(pose_group)
        for sample in item.poses:
            _write_sample(docking, sample.name, sample, compression)
        if item.crystal is not None:
            _write_sample(group, crystal_group, item.crystal, compression)
