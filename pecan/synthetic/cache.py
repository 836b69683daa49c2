"""Idempotent, locked generation: reuse a data set made with the same arguments."""

from __future__ import annotations

import contextlib
import inspect
import json
import logging
import pathlib
from pathlib import Path

from pecan.fileio import atomic_path
from pecan.synthetic.writer import MARKER_NAME, generate_dataset

log = logging.getLogger("pecan")

LOCK_NAME = ".synthetic.lock"
GENERATOR_VERSION = 1

# ---------------------------------------------------------------- ensure

def _marker_arguments(kwargs):
    """All generate_dataset arguments that shape the data, defaults filled, JSON-comparable."""
    bound = inspect.signature(generate_dataset).bind("unused", **kwargs)
    bound.apply_defaults()
    arguments = dict(bound.arguments)
    for key in ("out_dir", "progress"):
        arguments.pop(key)
    return json.loads(json.dumps(arguments))


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
    arguments = _marker_arguments(kwargs)
    marker_path = out_dir / MARKER_NAME
    out_dir.mkdir(parents=True, exist_ok=True)
    with _directory_lock(out_dir):
        marker = _read_marker(marker_path)
        if _marker_matches(out_dir, marker, arguments):
            return [out_dir / name for name in marker["shards"]]
        shards = generate_dataset(out_dir, **kwargs)
        _remove_stale_shards(out_dir, marker, shards)
        payload = {"version": GENERATOR_VERSION, "arguments": arguments,
                   "shards": [path.name for path in shards], "index": arguments["index_name"]}
        with atomic_path(marker_path) as temporary:
            temporary.write_text(json.dumps(payload, indent=1, sort_keys=True))
    return shards


def dataset_is_current(out_dir, **kwargs):
    """True when out_dir holds a complete dataset that ensure_dataset made with these arguments."""
    out_dir = pathlib.Path(out_dir)
    return _marker_matches(out_dir, _read_marker(out_dir / MARKER_NAME), _marker_arguments(kwargs))


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
    settings = dict(n_shards=spec.shards, complexes_per_shard=spec.complexes_per_shard, seed=spec.seed,
                    rmsd_threshold=data.rmsd_threshold, index_name=Path(first_csv).name)
    directory = Path(data.data_dir)
    foreign = not (directory / MARKER_NAME).exists() and (
        (directory / settings["index_name"]).exists() or any(directory.glob("*.hdf5")))
    if foreign:  # data the generator did not write is never overwritten
        log.info("%s already holds data not made by the generator; using it as is", directory)
    elif not dataset_is_current(directory, **settings):
        log.info("generating the synthetic data set into %s (synthetic section of the config)",
                                        data.data_dir)
        ensure_dataset(data.data_dir, progress=config.train.progress, **settings)
