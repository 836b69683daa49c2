"""The derived index: every shard walked once (attributes hoisted into rows), saved as a CSV with a
sidecar key (each shard's content fingerprint, the settings and the CSV's own hash) in the first writable
location, and found again while that key still matches and the CSV still holds the bytes it was written
with (pecan.data.integrity)."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Iterable, Optional

import numpy as np
import pandas as pd

from pecan.data import identity, integrity, layout, locations
from pecan.data.index_rows import normalise
from pecan.data.sample import skip_or_raise
from pecan.data.settings import IndexSettings
from pecan.runtime import fileio
from pecan.runtime.errors import DataError

log = logging.getLogger(__name__)

# ---------------------------------------------------------------------------- where it is saved


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
    index: pd.DataFrame,
    shard_dir: Path,
    prefix: str,
    data_dir: str = "",
    index_dir: str = "",
    key: Optional[dict] = None,
) -> Path:
    """Save a derived index (plus a sidecar naming what it was derived from) in the first writable location."""
    out = index.copy()
    if data_dir:
        base = locations.absolute(data_dir)
        out["shard"] = [os.path.relpath(p, base) if Path(p).is_relative_to(base) else p for p in out["shard"]]

    def write(directory: Path) -> Path:
        path = directory / f"{prefix}_all.csv"
        layout.write_index_csv(out, path)
        # The sidecar is written last: a CSV without a matching sidecar is never reused.
        sidecar = {**(key or {}), "csv_blake2b": identity.content_hash(path)}
        fileio.write_text(_sidecar(path), fileio.json_text(sidecar))
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
    chain = index_locations(shard_dir, index_dir)
    for k, location in enumerate(chain):
        path = location.directory / f"{prefix}_all.csv"
        try:
            saved = json.loads(_sidecar(path).read_text())
        except (OSError, ValueError):
            continue
        if key_still_matches(saved, shards, params, identity.confirmed_path(path)):
            if csv_is_intact(path, saved, [earlier.directory for earlier in chain[:k]]):
                return path
            continue
        log.info("derived index %s is stale (a shard's content or the settings changed); passing over it", path)
    return None


def csv_is_intact(path: Path, saved: dict, earlier: list[Path]) -> bool:
    """Whether a derived CSV holds the bytes its sidecar records; one from before sidecars recorded them is
    stale, a changed one is removed so that it is derived again, or refused where it cannot be removed."""
    recorded = saved.get("csv_blake2b")
    if recorded is None:
        log.info("derived index %s has no checksum (an older PECAN wrote it); deriving it again", path)
        return False
    try:
        if identity.content_hash(path) == recorded:
            return True
    except OSError:
        return False
    corrupt = integrity.CorruptFile(
        f"derived index {path} does not hold the bytes its sidecar {_sidecar(path).name} records (it changed "
        "after it was written)"
    )
    remedy = "set data.index_dir to a directory of your own (an index derived there is found first) or delete the file"
    integrity.discard(path, corrupt, earlier, remedy)
    return False


# ---------------------------------------------------------------------------- deriving from shards


def _pose_row(shard: Path, complex_id: str, pose_id: str, group, affinity: float, is_crystal: int) -> dict:
    attrs = layout.sample_attrs(group)
    where = f"shard {shard}, pose {complex_id}/{pose_id}"
    row = {
        "shard": str(shard),
        "complex_id": complex_id,
        "pose_id": pose_id,
        "label": layout.scalar(attrs, "label", where),
        "rmsd": layout.scalar(attrs, "rmsd", where),
        "affinity": affinity,
        "docking_score": layout.scalar(attrs, "score", where),
        "is_crystal": is_crystal,
    }
    for name in layout.INTERACTION_ATTRS:
        row[name] = layout.scalar(attrs, name, where)
    if is_crystal and np.isnan(row["rmsd"]):
        row["rmsd"] = 0.0
    return row


def _complex_rows(shard: Path, complex_id: str, complex_group, settings: IndexSettings) -> list[dict]:
    affinity = layout.scalar(complex_group.attrs, "affinity", f"shard {shard}, complex {complex_id}")
    poses = complex_group.get(settings.pose_group)
    if poses is None:
        raise DataError(f"{shard}: complex {complex_id} has no pose group '{settings.pose_group}'")
    samples = layout.complex_samples(complex_group, settings.pose_group, settings.crystal_group, settings.use_crystal)
    return [
        _pose_row(shard, complex_id, pose_id, group, affinity, int(is_crystal))
        for pose_id, is_crystal, group in samples
    ]


def _shard_rows(shard: Path, settings: IndexSettings) -> tuple[list[dict], int]:
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
        for complex_id in names:
            try:
                rows.extend(_complex_rows(shard, complex_id, handle[complex_id], settings))
            except Exception as err:  # noqa: BLE001 - any failure of a corrupt complex must name it
                named = (
                    err
                    if isinstance(err, DataError)
                    else DataError(f"shard {shard}, complex {complex_id}: unreadable ({type(err).__name__}: {err})")
                )
                skip_or_raise(named, settings.on_bad_sample, "skipping")
                skipped += 1
    return rows, skipped


def derive_index(shards: Iterable[Path], settings: IndexSettings, progress: bool = False) -> pd.DataFrame:
    """Walk each shard once and build the index (attributes hoisted); errors name shard and complex."""
    from pecan.runtime.progress import track

    rows: list[dict] = []
    skipped = 0
    shards = list(shards)
    for shard in track(shards, "indexing shards", "shard", progress):
        try:
            shard_rows, bad_complexes = _shard_rows(shard, settings)
            rows.extend(shard_rows)
            skipped += bad_complexes
        except DataError as err:
            skip_or_raise(err, settings.on_bad_sample, "skipping a whole shard")
            skipped += 1
    if skipped:
        log.warning("skipped %d shard(s) or complex(es) with a bad layout while indexing", skipped)
    if not rows:
        raise DataError(f"no samples found in {len(shards)} shard(s): {', '.join(str(s) for s in shards[:3])}")
    frame = pd.DataFrame(rows, columns=list(layout.INDEX_COLUMNS))
    if frame[list(layout.INTERACTION_ATTRS)].isna().all().all():
        log.warning(
            "shards under %s carry no interaction counts (%s), as in FAST's own files: training without them, "
            "every pose's counts are 0 (set model.use_pose_features: false to leave them out of the model)",
            Path(shards[0]).parent,
            ", ".join(layout.INTERACTION_ATTRS),
        )
    index = normalise(frame, settings.rmsd_threshold, f"shards under {Path(shards[0]).parent}", **settings.labels())
    index.attrs["skipped"] = skipped
    return index
