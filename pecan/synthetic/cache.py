"""Idempotent, locked, atomic generation: reuse a data set made with the same arguments.

A generation writes into a temporary directory inside the data directory, announces itself with a
pending marker, then renames its files into place and writes the completion marker last. A generation
killed at any point leaves either no new files (only the temporary directory, removed by the next
start) or the pending marker, so the next start generates again instead of training on part of a set.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import pathlib
import shutil
from pathlib import Path

from pecan.runtime.fileio import atomic_path, json_text, move_into_place
from pecan.synthetic.writer import GENERATOR_VERSION, MARKER_NAME, generate_dataset, marker_arguments, write_marker

log = logging.getLogger("pecan")

LOCK_NAME = ".synthetic.lock"
PENDING_NAME = ".synthetic.pending.json"  # present from the first rename into place until the marker is written
TEMP_PREFIX = ".synthetic-tmp-"

# ---------------------------------------------------------------- ensure


@contextlib.contextmanager
def _directory_lock(directory):
    """Serialise concurrent callers (e.g. several ranks); a no-op where flock is unavailable."""
    try:
        import fcntl

        handle = open(pathlib.Path(directory) / LOCK_NAME, "a")
    except (ImportError, OSError):
        yield
        return
    with handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX)
        except OSError:
            pass
        yield


def _read_marker(path):
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def ensure_dataset(out_dir, **kwargs):
    """Generate unless out_dir already holds a complete dataset made with the same arguments."""
    out_dir = pathlib.Path(out_dir)
    arguments = marker_arguments(kwargs)
    marker_path = out_dir / MARKER_NAME
    out_dir.mkdir(parents=True, exist_ok=True)
    with _directory_lock(out_dir):
        marker = _read_marker(marker_path)
        if _marker_matches(out_dir, marker, arguments):
            return [out_dir / name for name in marker["shards"]]
        _remove_temporaries(out_dir)
        temporary = out_dir / f"{TEMP_PREFIX}{os.getpid()}"
        built = generate_dataset(temporary, **kwargs)
        names = [path.name for path in built]
        pending = _read_marker(out_dir / PENDING_NAME)
        _write_json(out_dir / PENDING_NAME, {"shards": names, "index": arguments["index_name"]})
        marker_path.unlink(missing_ok=True)  # the old marker no longer describes what is on disk
        for name in (*names, arguments["index_name"]):
            move_into_place(temporary / name, out_dir / name)
        shards = [out_dir / name for name in names]
        _remove_stale_shards(out_dir, marker, shards)
        _remove_stale_shards(out_dir, pending, shards)
        write_marker(out_dir, arguments, names)
        (out_dir / PENDING_NAME).unlink()
        shutil.rmtree(temporary, ignore_errors=True)
    return shards


def _write_json(path, payload):
    with atomic_path(path) as temporary:
        temporary.write_text(json_text(payload, indent=1, sort_keys=True))


def _remove_temporaries(out_dir):
    """Temporary directories of generations that were killed (the caller holds the directory lock)."""
    for leftover in out_dir.glob(f"{TEMP_PREFIX}*"):
        log.info("removing %s, left by an interrupted generation", leftover)
        shutil.rmtree(leftover, ignore_errors=True)


def dataset_is_current(out_dir, **kwargs):
    """True when out_dir holds a complete dataset that ensure_dataset made with these arguments."""
    out_dir = pathlib.Path(out_dir)
    return _marker_matches(out_dir, _read_marker(out_dir / MARKER_NAME), marker_arguments(kwargs))


def _marker_matches(out_dir, marker, arguments):
    if not isinstance(marker, dict) or marker.get("version") != GENERATOR_VERSION:
        return False
    if marker.get("arguments") != arguments:
        return False
    names = [*marker.get("shards", []), marker.get("index", "")]
    return all(name and (out_dir / name).is_file() for name in names)


def _remove_stale_shards(out_dir, marker, shards):
    """Delete shards an earlier, larger generation left behind (only ones its marker listed)."""
    if not isinstance(marker, dict):
        return
    current = {path.name for path in shards}
    for name in marker.get("shards", []):
        if name not in current and pathlib.Path(name).name == name:
            (out_dir / name).unlink(missing_ok=True)


def ensure_from_config(config) -> None:
    """Generate the synthetic data set the config describes into data.data_dir unless it is already there
    (ensure_dataset locks the directory and writes atomically, so concurrent starts generate it once)."""
    data, spec = config.data, config.synthetic
    first_csv = data.train_csvs[0] if data.train_csvs else "index.csv"
    settings = dict(
        n_shards=spec.shards,
        complexes_per_shard=spec.complexes_per_shard,
        seed=spec.seed,
        rmsd_threshold=data.rmsd_threshold,
        index_name=Path(first_csv).name,
    )
    directory = Path(data.data_dir)
    interrupted = (directory / PENDING_NAME).exists()
    foreign = (
        not interrupted
        and not (directory / MARKER_NAME).exists()
        and ((directory / settings["index_name"]).exists() or any(directory.glob("*.hdf5")))
    )
    if foreign:  # data the generator did not write is never overwritten
        log.info("%s already holds data not made by the generator; using it as is", directory)
    elif interrupted:
        log.warning("%s holds an interrupted generation (%s); generating it again", directory, PENDING_NAME)
        ensure_dataset(data.data_dir, progress=config.train.progress, **settings)
    elif not dataset_is_current(directory, **settings):
        log.info("generating the synthetic data set into %s (synthetic section of the config)", data.data_dir)
        ensure_dataset(data.data_dir, progress=config.train.progress, **settings)
