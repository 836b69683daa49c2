"""The zero-metadata data path: each shard read once into a flat, memory-mapped, columnar pack file.

One pack file per shard (``<stem>.<key>.pecanpack``) holds every sample of the shard, already cropped and
with its radius edges (they never change between epochs):

    magic b"PECANPK2" | uint64 header length | uint32 CRC-32 of the header | JSON header | 64-byte aligned arrays
    x [A, 19] f4, pos [A, 3] f4, vdw [A] f4 (van der Waals radii), atom_offsets [S+1] i8,
    edge_src [E] i4, edge_dst [E] i4 (local to the sample), edge_type [E] i1, edge_offsets [S+1] i8,
    scalars [S, 8] f4 (label, rmsd, score, 5 interaction counts as the shard stores them)

The header names the source shard's fingerprint (stat record and whole-file hash, pecan.data.identity: a
shard whose bytes changed invalidates the pack, even with size and mtime kept),
the graph parameters, the (complex_id, pose_id) key of every sample, the payload's size and each array's CRC-32
(pecan.data.integrity: a pack is verified before it is used). Each worker maps each pack once; the
page cache shares the bytes between workers and ranks of a node. ``__getitems__`` gathers a whole batch
with offset arithmetic and builds the batch (``pecan.data.batch.GraphBatch``) directly. Steady state: zero HDF5
calls per sample.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence

import numpy as np
import pandas as pd
import torch

from pecan.data import identity, integrity, layout, locations, schema
from pecan.data.batch import GraphBatch, with_bookkeeping
from pecan.data.rotation import rotate_about_centroids
from pecan.data.sample import ProcessLocal, SampleTable, skip_or_raise
from pecan.data.settings import ReaderSettings
from pecan.runtime import tracing
from pecan.runtime.errors import DataError

log = logging.getLogger(__name__)

MAGIC = b"PECANPK2"
PREFIX = struct.Struct("<QI")  # header length, CRC-32 of the header
# 2: vdw radii; 3: edges sorted by target; 4: whole-file source hash; 5: checksums. Older packs are rebuilt.
PACK_VERSION = 5
ALIGN = 64
REMEDY = (
    "set data.cache_dir to a directory of your own (a pack built there is found before this one), or have whoever "
    "owns this one repack it (`pecan pack CONFIG.yaml`) or delete the file"
)
SCALAR_COLUMNS = ("label", "rmsd", "score", *layout.INTERACTION_ATTRS)
# The contract's per-node/per-edge arrays (pecan.data.schema) in their stored dtypes, plus the pack's own.
ARRAY_DTYPES = {
    **{f.name: np.dtype(f.stored or f.dtype) for f in schema.graph_arrays("node") + schema.graph_arrays("edge")},
    "atom_offsets": np.int64,
    "edge_src": np.int32,
    "edge_dst": np.int32,
    "edge_offsets": np.int64,
    "scalars": np.float32,
}


@dataclass(frozen=True)
class PackParams:
    """Everything that changes a pack's contents besides the shard itself."""

    pose_group: str
    crystal_group: str
    pocket_radius: float
    edge_cutoff: float
    rmsd_threshold: float
    max_atoms: int = 0
    max_edges: int = 0

    def key(self, shard: Path) -> str:
        """Short hash naming the pack of ``shard`` under these parameters."""
        text = json.dumps([PACK_VERSION, str(locations.absolute(shard)), self.__dict__], sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:12]


def source_fingerprint(shard: Path) -> dict:
    """The shard's stat record and whole-file BLAKE2b hash (pecan.data.identity), taken before it is read."""
    return identity.fingerprint(shard)


# ---------------------------------------------------------------------------- locating packs


def pack_locations(shard: Path, cache_dir: str = "") -> list[locations.Location]:
    """Where a shard's pack may live, in order: data.cache_dir, beside the shard (.pecan_cache), per-user cache,
    per-user temp dir (pecan.data.locations)."""
    return locations.chain(cache_dir, "data.cache_dir", Path(shard).parent / ".pecan_cache", "packs")


def pack_name(shard: Path, params: PackParams) -> str:
    """File name of a shard's pack."""
    return f"{shard.stem}.{params.key(shard)}.pecanpack"


def _data_start(header_length: int) -> int:
    """First byte of the array area: after magic, length and header, rounded up to ALIGN."""
    return -(-(len(MAGIC) + PREFIX.size + header_length) // ALIGN) * ALIGN


def read_header(path: Path) -> dict:
    """Parse a pack file's header (one open, one small read); a header that fails its checksum raises
    CorruptFile, a file that is no pack of this format a DataError."""
    with open(path, "rb") as handle:
        if handle.read(len(MAGIC)) != MAGIC:
            raise DataError(f"{path} is not a PECAN pack file of this format ({MAGIC.decode()})")
        prefix = handle.read(PREFIX.size)
        if len(prefix) != PREFIX.size:
            raise integrity.CorruptFile(f"pack {path} is cut short inside its header")
        length, crc = PREFIX.unpack(prefix)
        blob = handle.read(min(length, os.fstat(handle.fileno()).st_size))
    integrity.check_header(path, blob, length, crc)
    header = json.loads(blob)
    header["data_start"] = _data_start(length)
    return header


def current_header(path: Path, shard: Path) -> Optional[dict]:
    """The header of ``path`` when it is a readable pack of this version built from the bytes ``shard`` holds
    now (an unchanged stat record answers at once; otherwise the shard is hashed again), else None. A pack
    whose own header fails its checksum raises CorruptFile."""
    try:
        header = read_header(path)
    except integrity.CorruptFile:
        raise
    except (OSError, ValueError):  # a DataError is a ValueError: not a pack of this format
        return None
    current = header.get("version") == PACK_VERSION and identity.still_matches(
        shard, header.get("source"), identity.confirmed_path(path)
    )
    return header if current else None


def pack_is_intact(path: Path) -> bool:
    """Whether ``path`` is a pack whose size and checksums hold (one read of the file)."""
    try:
        integrity.verify(path, read_header(path))
    except (OSError, ValueError):  # DataError and CorruptFile are ValueErrors
        return False
    return True


def usable_pack(path: Path, shard: Path, earlier: Sequence[Path] = ()) -> bool:
    """Whether ``path`` is a current pack of ``shard`` whose bytes pass their checksums (one read of the file).
    A stale, foreign or unreadable one is passed over; a corrupt one is removed with a warning (so that it is
    rebuilt), passed over where it cannot be removed but a directory ``earlier`` in the chain takes the
    rebuilt pack, and refused otherwise (pecan.data.integrity.discard)."""
    if not path.exists():
        return False
    try:
        header = current_header(path, shard)
        if header is not None:
            integrity.verify(path, header)
            return True
    except integrity.CorruptFile as err:
        integrity.discard(path, err, earlier, REMEDY)
        return False
    except OSError as err:
        log.info("pack %s is unreadable (%s); passing over it", path, err)
        return False
    log.info("pack %s is stale or foreign; passing over it", path)
    return False


def find_valid_pack(shard: Path, params: PackParams, cache_dir: str = "") -> Optional[Path]:
    """An existing, intact pack for ``shard`` whose fingerprint still matches the shard, looked up through the
    chain.

    A pack that sits where this user cannot write (a shared cache) is used when valid; one that is unreadable,
    foreign or stale is passed over (and rebuilt in the first writable location); a corrupt one is rebuilt,
    or refused where it cannot be removed and no earlier directory takes the rebuilt one (usable_pack)."""
    chain = pack_locations(shard, cache_dir)
    for k, location in enumerate(chain):
        path = location.directory / pack_name(shard, params)
        if usable_pack(path, shard, [earlier.directory for earlier in chain[:k]]):
            return path
    return None


# ---------------------------------------------------------------------------- reading packs


def map_pack(path: Path, in_memory: bool = False) -> dict[str, np.ndarray]:
    """Memory-map one pack file once (or read it whole into RAM) and return views of its arrays."""
    header = read_header(path)
    integrity.check_size(path, header)  # a pack cut short after it was verified fails here, named
    mapped = np.fromfile(path, dtype=np.uint8) if in_memory else np.memmap(path, dtype=np.uint8, mode="r")
    arrays = {}
    for name, spec in header["arrays"].items():
        start = header["data_start"] + spec["offset"]
        count = int(np.prod(spec["shape"])) if spec["shape"] else 1
        dtype = np.dtype(spec["dtype"])
        view = mapped[start : start + count * dtype.itemsize].view(dtype).reshape(spec["shape"])
        # A plain ndarray over the same mapping: slicing a np.memmap subclass costs several times more.
        arrays[name] = np.asarray(view)
    return arrays


def gather_batch(packs: list[dict[str, np.ndarray]], pack_ids: np.ndarray, local_ids: np.ndarray) -> dict:
    """Concatenate the samples (pack_ids[k], local_ids[k]) into flat batch arrays, in the given order: the
    contract's per-node and per-edge "graph" fields (pecan.data.schema), ``edge_index`` and ``atom_counts``.

    Per-sample slices of plain ndarray views plus one vectorised edge shift: measured 4x faster than grouping
    the batch by pack and fancy-indexing each group (137k vs 34k samples/s at batch 32 under a global shuffle,
    173k vs 94k when every sample shares one pack; benchmarks/bench_gather.py).
    """
    node_fields = [f.name for f in schema.graph_arrays("node")]
    edge_fields = ["edge_src", "edge_dst"] + [f.name for f in schema.graph_arrays("edge")]
    pieces: dict[str, list[np.ndarray]] = {name: [] for name in node_fields + edge_fields}
    atom_counts = np.empty(len(local_ids), dtype=np.int64)
    edge_counts = np.empty(len(local_ids), dtype=np.int64)
    for k, (p, s) in enumerate(zip(pack_ids.tolist(), local_ids.tolist())):
        pack = packs[p]
        a0, a1 = pack["atom_offsets"][s], pack["atom_offsets"][s + 1]
        e0, e1 = pack["edge_offsets"][s], pack["edge_offsets"][s + 1]
        for name in node_fields:
            pieces[name].append(pack[name][a0:a1])
        for name in edge_fields:
            pieces[name].append(pack[name][e0:e1])
        atom_counts[k], edge_counts[k] = a1 - a0, e1 - e0
    arrays = {name: np.concatenate(parts) for name, parts in pieces.items()}
    # Local edge ends become batch node ids by adding each sample's first node position.
    node_start = np.concatenate([[0], np.cumsum(atom_counts)[:-1]])
    shift = np.repeat(node_start, edge_counts)
    arrays["edge_index"] = np.stack(
        [arrays.pop("edge_src").astype(np.int64) + shift, arrays.pop("edge_dst").astype(np.int64) + shift]
    )
    arrays["atom_counts"] = atom_counts
    return arrays


def to_batch(arrays: dict, values: dict[str, np.ndarray]) -> GraphBatch:
    """Build the batch of the contract's fields straight from flat gathered ``arrays`` and the samples'
    per-graph ``values`` (SampleTable.sample_field_values), with no per-sample objects."""
    counts = torch.from_numpy(arrays["atom_counts"])
    return with_bookkeeping(schema.tensors({**arrays, **values}, num_graphs=len(counts)), counts)


def rotate_batch(batch: GraphBatch) -> GraphBatch:
    """One random rigid rotation per graph about its centroid (vectorised augmentation)."""
    batch.pos = rotate_about_centroids(batch.pos, batch.batch, batch.num_graphs)
    return batch


class PackedDataset(ProcessLocal, torch.utils.data.Dataset):
    """Samples gathered from memory-mapped packs; zero HDF5 calls per sample."""

    def __init__(
        self,
        index: pd.DataFrame,
        pack_paths: dict[str, Path],
        settings: ReaderSettings = ReaderSettings(),
    ) -> None:
        self.settings = settings
        self.table = SampleTable.from_index(index)
        self.pack_paths = [Path(pack_paths[s]) if pack_paths.get(s) else None for s in self.table.shards]
        self._start_process_state()
        keep, self.pack_id, self.local_id = self._locate()
        if not keep.all():
            self.table = _subset(self.table, keep)
        self.skipped_at_build = int((~keep).sum())
        self.use_decode_cache = False  # a pack holds decoded arrays: there is nothing to cache

    def _locate(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Map each index row to (pack, sample); missing or bad samples error or are counted and dropped."""
        t = self.table
        keep = np.ones(len(t), dtype=bool)
        local = np.full(len(t), -1, dtype=np.int64)
        for shard_id, path in enumerate(self.pack_paths):
            if path is None:  # its shard could not be packed (under skip; logged by ensure_packed)
                header = {"keys": [], "bad": [], "shard_error": f"shard {t.shards[shard_id]} could not be read"}
            else:
                header = read_header(path)
            lookup = {(p, q): k for k, (p, q, _) in enumerate(header["keys"])}
            bad = {(p, q): message for p, q, message in header["bad"]}
            for i in np.flatnonzero(t.shard_id == shard_id):
                key = (t.complex_id[i], t.pose_id[i])
                if key in lookup:
                    local[i] = lookup[key]
                    continue
                message = bad.get(
                    key,
                    header.get("shard_error") or f"{t.where(i)}: pose named in the index does not exist in the shard",
                )
                skip_or_raise(DataError(message), self.settings.on_bad_sample)
                keep[i] = False
        if not keep.any():
            raise DataError("every sample of the index is bad or missing; nothing to train on")
        return keep, t.shard_id[keep].astype(np.int64), local[keep]

    def __len__(self) -> int:
        return len(self.table)

    def _fresh_process_state(self) -> None:
        # Maps are per process: a worker maps each pack itself, once.
        self._packs: Optional[list[dict[str, np.ndarray]]] = None

    def __getstate__(self) -> dict:
        state = super().__getstate__()
        state["_packs"] = None
        return state

    def _mapped(self) -> list[dict[str, np.ndarray]]:
        self._own_process()
        if self._packs is None:
            self._packs = [map_pack(p, self.settings.in_memory) if p is not None else {} for p in self.pack_paths]
            self.counters.add("file_opens", len(self._packs))
        return self._packs

    def __getitems__(self, indices: list[int]) -> GraphBatch:
        """Gather one whole batch (traced per batch: there is no per-sample step here)."""
        idx = np.asarray(indices, dtype=np.int64)
        with tracing.span("pecan.io", "pack_gather", size=len(idx)):
            arrays = gather_batch(self._mapped(), self.pack_id[idx], self.local_id[idx])
        t = self.table
        with tracing.span("pecan.data", "collate", size=len(idx)):
            batch = to_batch(arrays, t.sample_field_values(idx))
        self.counters.add("samples", len(idx))
        self.counters.add("bytes_read", sum(a.nbytes for k, a in arrays.items() if k != "atom_counts"))
        if self.settings.augment:
            batch = rotate_batch(batch)
        batch.io_counts = self.counters.take()
        return batch

    def __getitem__(self, i: int) -> GraphBatch:
        return self.__getitems__([i])


def _subset(table: SampleTable, keep: np.ndarray) -> SampleTable:
    return SampleTable(
        shards=table.shards,
        shard_id=table.shard_id[keep],
        complex_id=table.complex_id[keep],
        pose_id=table.pose_id[keep],
        is_crystal=table.is_crystal[keep],
        label=table.label[keep],
        pose_features=table.pose_features[keep],
        complex_code=table.complex_code[keep],
        docking_features=None if table.docking_features is None else table.docking_features[keep],
        rmsd=None if table.rmsd is None else table.rmsd[keep],
        target=None if table.target is None else table.target[keep],
    )
