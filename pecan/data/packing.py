"""Building packs: read a shard once, turn every pose into its graph, and write the flat pack file that
``pecan.data.packed`` memory-maps (in the first writable location of the chain, or where rank 0 decided)."""

from __future__ import annotations

import json
import logging
import os
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from pathlib import Path
from typing import Iterable, Optional

import numpy as np

from pecan.data import integrity, layout, locations, schema
from pecan.data.graph import build_graph
from pecan.data.packed import (
    ALIGN,
    ARRAY_DTYPES,
    MAGIC,
    PACK_VERSION,
    PREFIX,
    SCALAR_COLUMNS,
    PackParams,
    _data_start,
    find_valid_pack,
    pack_locations,
    pack_name,
    source_fingerprint,
)
from pecan.data.sample import skip_or_raise
from pecan.runtime import fileio
from pecan.runtime.errors import DataError

log = logging.getLogger(__name__)

VERIFY_THREADS = 8  # packs checked at once when they are looked up


def _shard_samples(handle, shard: Path, params: PackParams):
    """Yield (complex_id, pose_id, is_crystal, group) for every sample of an open shard. A complex without its pose
    group holds no samples (indexing skipped or reported it already); its crystal pose is still packed."""
    for complex_id in handle:
        complex_group = handle[complex_id]
        if params.pose_group not in complex_group:
            log.warning("%s: complex %s has no pose group '%s'", shard, complex_id, params.pose_group)
        for pose_id, is_crystal, group in layout.complex_samples(
            complex_group, params.pose_group, params.crystal_group
        ):
            yield complex_id, pose_id, is_crystal, group


def _scalars(group, where: str) -> list[float]:
    attrs = layout.sample_attrs(group)
    return [layout.scalar(attrs, n, where) for n in SCALAR_COLUMNS]


def _read_shard(shard: Path, params: PackParams):
    """Decode every sample of a shard into flat lists; per-sample problems are recorded, not raised."""
    import h5py

    try:
        handle = h5py.File(shard, "r", locking=False)
    except OSError as err:
        raise DataError(f"cannot pack shard {shard}: not a readable HDF5 file ({err})") from err
    keys, bad, graphs, scalars = [], [], [], []
    with handle:
        try:
            for complex_id, pose_id, is_crystal, group in _shard_samples(handle, shard, params):
                where = f"shard {shard}, pose {complex_id}/{pose_id}"
                try:
                    graph, values = _read_sample(group, params, where)
                except DataError as err:
                    bad.append([complex_id, pose_id, str(err)])
                    continue
                keys.append([complex_id, pose_id, int(is_crystal)])
                graphs.append(graph)
                scalars.append(values)
        except Exception as err:  # noqa: BLE001 - a corrupt shard's walk fails with KeyError/RuntimeError/...
            raise DataError(
                f"cannot pack shard {shard}: its layout is unreadable ({type(err).__name__}: {err})"
            ) from err
    return keys, bad, graphs, scalars


def _read_sample(group, params: PackParams, where: str):
    """One sample's graph and scalars; any h5py/numpy failure becomes a DataError naming shard and pose."""
    try:
        dataset = group.get(layout.DATASET_NAME)
        if dataset is None:
            raise DataError(f"{where}: dataset '{layout.DATASET_NAME}' not found")
        graph = build_graph(
            layout.read_data(dataset, where),
            params.pocket_radius,
            params.edge_cutoff,
            where,
            params.max_atoms,
            params.max_edges,
            vdw=group.attrs.get(layout.VDW_ATTR),
        )
        return graph, _scalars(group, where)
    except DataError:
        raise
    except Exception as err:  # noqa: BLE001
        raise DataError(f"{where}: unreadable ({type(err).__name__}: {err})") from err


def _flatten(graphs, scalars) -> dict[str, np.ndarray]:
    """The pack's arrays: every per-node and per-edge array of the contract (pecan.data.schema), the local
    edge ends, the offsets and the scalars."""
    atom_counts = np.array([g.num_nodes for g in graphs], dtype=np.int64)
    edge_counts = np.array([g.edge_index.shape[1] for g in graphs], dtype=np.int64)
    edges = np.concatenate([g.edge_index for g in graphs], axis=1) if graphs else np.zeros((2, 0), dtype=np.int64)
    arrays = {}
    for field in schema.graph_arrays("node") + schema.graph_arrays("edge"):
        empty = np.zeros((0, *field.width), dtype=ARRAY_DTYPES[field.name])
        arrays[field.name] = np.concatenate([getattr(g, field.name) for g in graphs]) if graphs else empty
    return {
        **arrays,
        "atom_offsets": np.concatenate([[0], np.cumsum(atom_counts)]),
        "edge_src": edges[0].astype(np.int32),
        "edge_dst": edges[1].astype(np.int32),
        "edge_offsets": np.concatenate([[0], np.cumsum(edge_counts)]),
        "scalars": np.asarray(scalars, dtype=np.float32).reshape(-1, len(SCALAR_COLUMNS)),
    }


def _write_pack(path: Path, header: dict, arrays: dict[str, np.ndarray]) -> None:
    """Atomic write: temp file in the destination directory, then os.replace. The header carries the
    payload's size and each array's CRC-32, the prefix the header's (pecan.data.integrity)."""
    arrays = {name: np.ascontiguousarray(array, dtype=ARRAY_DTYPES[name]) for name, array in arrays.items()}
    layout, offset = {}, 0
    for name, array in arrays.items():
        layout[name] = {
            "dtype": array.dtype.str,
            "shape": list(array.shape),
            "offset": offset,
            "crc32": integrity.array_crc32(array),
        }
        offset += -(-array.nbytes // ALIGN) * ALIGN
    blob = json.dumps({**header, "payload_bytes": offset, "arrays": layout}).encode()
    data_start = _data_start(len(blob))
    with fileio.atomic_write(path, "wb") as out:
        out.write(MAGIC + PREFIX.pack(len(blob), integrity.header_crc32(blob)) + blob)
        out.write(b"\0" * (data_start - out.tell()))
        for name, array in arrays.items():
            out.seek(data_start + layout[name]["offset"])
            out.write(array.reshape(-1).view(np.uint8))
        out.truncate(data_start + offset)


def _build(shard: Path, params: PackParams) -> tuple[dict, dict[str, np.ndarray]]:
    """Header and arrays of a shard's pack (the one read of the shard)."""
    fingerprint = source_fingerprint(shard)
    keys, bad, graphs, scalars = _read_shard(shard, params)
    header = {
        "version": PACK_VERSION,
        "shard": str(shard),
        "source": fingerprint,
        "params": params.__dict__,
        "keys": keys,
        "bad": bad,
    }
    return header, _flatten(graphs, scalars)


def pack_shard(shard: Path, params: PackParams, cache_dir: str = "") -> Path:
    """Read a shard once and write its pack in the first writable location; a corrupt shard raises and
    leaves nothing."""
    shard = locations.absolute(shard)
    header, arrays = _build(shard, params)

    def write(directory: Path) -> Path:
        path = directory / pack_name(shard, params)
        _write_pack(path, header, arrays)
        return path

    try:
        return locations.write_first(pack_locations(shard, cache_dir), write, "packs")[0]
    except locations.NoWritableLocation as err:
        raise DataError(f"{shard}: {err}") from err


def pack_shard_at(shard: Path, params: PackParams, path: Path) -> Path:
    """(Re)build a shard's pack at exactly ``path``: used where another process already chose the place."""
    header, arrays = _build(locations.absolute(shard), params)
    try:
        _write_pack(Path(path), header, arrays)
    except OSError as err:
        raise DataError(f"cannot write the pack of {shard} at {path}: {err}") from err
    return Path(path)


def _pack_one(job) -> Path | DataError:
    try:
        return pack_shard(*job)
    except DataError as err:  # returned, so one broken shard does not hide the others' results
        return err


def ensure_packed(
    shards: Iterable[Path],
    params: PackParams,
    cache_dir: str = "",
    processes: int = 1,
    progress: bool = False,
    on_bad_sample: str = "error",
) -> list[Optional[Path]]:
    """Valid pack paths for every shard, building the missing or stale ones (in parallel if asked). A shard
    that cannot be packed is an error, or under on_bad_sample: skip None (its samples are then skipped)."""
    from pecan.runtime.progress import Progress

    shards = [locations.absolute(s) for s in shards]
    # Each shard's fingerprint is read once: valid, intact packs are kept, the rest built and taken as built.
    # Checksums run in threads (zlib and file reads release the GIL); the other ranks wait for this step.
    threads = max(1, min(len(shards), os.cpu_count() or 1, VERIFY_THREADS))
    with ThreadPoolExecutor(max_workers=threads) as pool:
        found = list(pool.map(lambda s: find_valid_pack(s, params, cache_dir), shards))
    paths = dict(zip(shards, found))
    todo = [s for s, path in paths.items() if path is None]
    if todo:
        log.info("packing %d of %d shard(s) (one-time read; later runs map the packs)", len(todo), len(shards))
        jobs = [(s, params, cache_dir) for s in todo]
        bar = Progress(len(jobs), "packing shards", "shard", progress)
        if processes > 1 and len(jobs) > 1:
            with ProcessPoolExecutor(max_workers=min(processes, len(jobs))) as pool:
                built = pool.map(_pack_one, jobs)
                for shard, path in zip(todo, built):
                    paths[shard] = path
                    bar.update()
        else:
            for shard, job in zip(todo, jobs):
                paths[shard] = _pack_one(job)
                bar.update()
        bar.close()
    for shard, path in paths.items():
        if isinstance(path, DataError):
            skip_or_raise(path, on_bad_sample, "skipping every sample of a shard")
            paths[shard] = None
    return [paths[s] for s in shards]
