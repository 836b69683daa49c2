"""The io_mode policy in one place: what each data path level does, as a table the readers, the loader and the
thread planner consult instead of comparing names.

Levels, cheapest last, each including the previous one's savings:
  reopen        open the shard, walk to the pose, read data + attributes, close - every sample (baseline)
  handle_cache  per-worker open handles, created lazily inside the worker and dropped across fork
  hoist         labels and the 5 interaction counts come from the index, not from HDF5 attributes
  decode_cache  per-worker cache of decoded graphs keyed by sample; off under augmentation
  packed        each shard read once into a memory-mapped pack; zero HDF5 calls per sample

Adding a level: a row in ``MODES`` (and, for a new reader, a branch in ``pecan.data.loader.make_dataset``).
Imports nothing, so the config can list the names without loading the data path.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class IOMode:
    """What one io_mode level does."""

    name: str
    packed: bool  # samples come from packs (built ahead by rank 0), not from HDF5 per sample
    keeps_handles: bool  # HDF5 files stay open per worker between samples
    attrs_from_index: bool  # label and interaction counts come from the index, not from HDF5 attributes
    decode_cache: bool  # decoded graphs are kept per worker (unless augmentation forbids it)
    in_process: bool  # automatic loader workers: none (the in-process gather beats a worker hand-over)


MODES: tuple[IOMode, ...] = (
    IOMode("reopen", packed=False, keeps_handles=False, attrs_from_index=False, decode_cache=False, in_process=False),
    IOMode(
        "handle_cache", packed=False, keeps_handles=True, attrs_from_index=False, decode_cache=False, in_process=False
    ),
    IOMode("hoist", packed=False, keeps_handles=True, attrs_from_index=True, decode_cache=False, in_process=False),
    IOMode(
        "decode_cache", packed=False, keeps_handles=True, attrs_from_index=True, decode_cache=True, in_process=False
    ),
    IOMode("packed", packed=True, keeps_handles=False, attrs_from_index=True, decode_cache=False, in_process=True),
)
NAMES = tuple(m.name for m in MODES)
H5_LEVELS = tuple(m.name for m in MODES if not m.packed)
_BY_NAME = {m.name: m for m in MODES}


def get(name: str) -> IOMode:
    """The level called ``name``; an unknown name is a ValueError listing the valid ones."""
    if name not in _BY_NAME:
        raise ValueError(f"data.io_mode {name!r} is not one of {', '.join(NAMES)}")
    return _BY_NAME[name]


def uses_packs(name: str) -> bool:
    """Whether level ``name`` reads packs (rank 0 must then build or find them before the job starts)."""
    return get(name).packed


def auto_workers(name: str, workers_for_hdf5: int) -> int:
    """data.num_workers = -1 (auto): none for an in-process level, else ``workers_for_hdf5``."""
    return 0 if get(name).in_process else workers_for_hdf5


def decode_cache_allowed(augment: bool, enabled: bool = True) -> bool:
    """The decode cache is off under augmentation (cached samples would repeat one transform) or when
    data.decode_cache (env PECAN_DECODE_CACHE) says so."""
    return enabled and not augment
