"""Data plumbing shared by every io_mode: the flat sample table, I/O counters and the batch collate.

Nothing here touches HDF5, so the packed path and the trainer import it without the HDF5 dataset.
"""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Optional, Protocol, runtime_checkable

import numpy as np
import pandas as pd

from pecan.data import layout, schema

if TYPE_CHECKING:
    import torch

log = logging.getLogger(__name__)

COUNTER_FIELDS = (
    "file_opens",
    "h5_file_opens",
    "h5_object_opens",
    "attr_reads",
    "dataset_reads",
    "bytes_read",
    "samples",
    "skipped",
    "worker_busy_ns",
)


class IOCounters:
    """Cheap always-on counters of one worker's I/O; ``take()`` hands over and resets the increments."""

    def __init__(self) -> None:
        self.values = np.zeros(len(COUNTER_FIELDS), dtype=np.int64)

    def add(self, name: str, amount: int = 1) -> None:
        """Increase one counter."""
        self.values[COUNTER_FIELDS.index(name)] += amount

    def take(self) -> torch.Tensor:
        """Increments since the last take, as an int64 tensor ordered like COUNTER_FIELDS."""
        import torch  # here, so that `pecan convert` (which reads the index helpers) starts without torch

        out = torch.from_numpy(self.values.copy())
        self.values[:] = 0
        return out


def counters_to_dict(values: torch.Tensor) -> dict[str, int]:
    """Name the entries of a counter tensor."""
    return {name: int(v) for name, v in zip(COUNTER_FIELDS, values.tolist())}


DOCKING_FEATURES = schema.N_DOCKING_FEATURES  # score / 10, gap to the complex's best / 5 in [0, 4], missing flag


def docking_features(index: pd.DataFrame) -> np.ndarray:
    """Per-pose docking-score inputs, float32 [S, 3]: the score in units of 10 kcal/mol, its gap to the best
    (lowest) score among its complex's docked poses in units of 5 kcal/mol (what top-1 depends on), and a flag
    for a missing score (crystal poses, shards without scores), whose other two entries are 0."""
    if "docking_score" not in index.columns:
        return missing_docking_features(len(index))
    out = np.zeros((len(index), DOCKING_FEATURES), dtype=np.float32)
    score = pd.to_numeric(index["docking_score"], errors="coerce").astype(float)
    present = np.isfinite(score.to_numpy())
    best = score.groupby(index["complex_id"].to_numpy()).transform("min").to_numpy()
    out[:, 0] = np.where(present, score.to_numpy() / 10.0, 0.0)
    out[:, 1] = np.where(present, np.clip((score.to_numpy() - best) / 5.0, 0.0, 4.0), 0.0)
    out[:, 2] = (~present).astype(np.float32)
    return out


def missing_docking_features(count: int) -> np.ndarray:
    """Docking features of ``count`` poses without a score: zeros with the missing flag set."""
    out = np.zeros((count, DOCKING_FEATURES), dtype=np.float32)
    out[:, 2] = 1.0
    return out


def known_rmsd(index: pd.DataFrame) -> Optional[np.ndarray]:
    """Each row's RMSD to the crystal pose (float32, NaN where unknown; a crystal row without one is 0), or None
    when the index has no rmsd column."""
    if "rmsd" not in index.columns:
        return None
    rmsd = pd.to_numeric(index["rmsd"], errors="coerce").to_numpy(dtype=np.float32)
    crystal = index["is_crystal"].to_numpy().astype(bool) if "is_crystal" in index.columns else False
    return np.where(np.isnan(rmsd) & crystal, np.float32(0.0), rmsd).astype(np.float32)


TARGET = "soft_target"
"""The index column of data.target_column's soft targets under the code's names (pecan.data.targets.attach)."""


def table_targets(index: pd.DataFrame) -> Optional[np.ndarray]:
    """The index's soft targets as float32 (NaN: none, e.g. a crystal pose), or None when it carries none."""
    if TARGET not in index.columns:
        return None
    return index[TARGET].to_numpy(dtype=np.float32)


@dataclass
class SampleTable:
    """The index as flat arrays: one row per sample, nothing looked up per sample in pandas."""

    shards: list[str]
    shard_id: np.ndarray  # int32 [S]
    complex_id: np.ndarray  # object [S], the complex's id
    pose_id: np.ndarray  # object [S]
    is_crystal: np.ndarray  # bool [S]
    label: np.ndarray  # float32 [S]
    pose_features: np.ndarray  # float32 [S, 5]
    complex_code: np.ndarray  # int64 [S], the complex as a number within this table (batch field complex_code)
    docking_features: Optional[np.ndarray] = None  # float32 [S, 3], see docking_features(); None: all missing
    rmsd: Optional[np.ndarray] = None  # float32 [S], Angstrom (NaN: unknown); for train.ranking_target rmsd
    target: Optional[np.ndarray] = None  # float32 [S], data.target_column's soft target (NaN: none, crystal poses)

    @classmethod
    def from_index(cls, index: pd.DataFrame) -> "SampleTable":
        """Flatten an index DataFrame."""
        shard_codes, shards = pd.factorize(index["shard"])
        complex_codes, _ = pd.factorize(index["complex_id"])
        return cls(
            shards=[str(s) for s in shards],
            shard_id=shard_codes.astype(np.int32),
            complex_id=index["complex_id"].to_numpy(dtype=object),
            pose_id=index["pose_id"].to_numpy(dtype=object),
            is_crystal=index["is_crystal"].to_numpy().astype(bool),
            label=index["label"].to_numpy().astype(np.float32),
            pose_features=index[list(layout.INTERACTION_ATTRS)].to_numpy().astype(np.float32),
            complex_code=complex_codes.astype(np.int64),
            docking_features=docking_features(index),
            rmsd=known_rmsd(index),
            target=table_targets(index),
        )

    def __len__(self) -> int:
        return len(self.shard_id)

    def sample_field_values(self, rows: np.ndarray) -> dict[str, np.ndarray]:
        """The contract's "sample" fields (pecan.data.schema) of index rows ``rows``."""
        rows = np.asarray(rows, dtype=np.int64)
        docking = missing_docking_features(len(rows)) if self.docking_features is None else self.docking_features[rows]
        return {
            "y": self.label[rows],
            "pose_features": self.pose_features[rows],
            "docking_features": docking,
            "complex_code": self.complex_code[rows],
            "sample_id": rows,
        }

    def where(self, i: int) -> str:
        """Human-readable location of sample i for error messages."""
        return f"shard {self.shards[self.shard_id[i]]}, pose {self.complex_id[i]}/{self.pose_id[i]}"

    def where_many(self, sample_ids) -> str:
        """The locations of several samples (a batch's ``sample_id`` tensor or a list), for error messages."""
        ids = sample_ids.view(-1).tolist() if hasattr(sample_ids, "view") else list(sample_ids)
        return "; ".join(self.where(int(i)) for i in ids)


def passthrough_collate(batch: Any) -> Any:
    """Collate for datasets whose ``__getitems__`` already returns a finished Batch."""
    return batch


@runtime_checkable
class PoseDataset(Protocol):
    """What the trainer, the samplers and the loaders read of a dataset, whichever reader built it
    (``H5PoseDataset``, ``PackedDataset``): each declares these in its
    ``__init__``."""

    table: SampleTable  # one row per sample, in dataset order
    use_decode_cache: bool  # decoded samples are reused; the trainer turns it off for a model that augments
    skipped_at_build: int  # bad samples dropped while the dataset was built (under data.on_bad_sample: skip)

    def __len__(self) -> int: ...

    def __getitem__(self, i: int) -> Any: ...


class ProcessLocal:
    """Base of datasets that hold per-process state (open HDF5 handles, mapped packs, decode caches): that
    state never crosses a pickle or a fork; each loader worker builds its own on first use.

    Subclasses call ``_start_process_state()`` at the end of ``__init__`` and ``_own_process()`` before
    touching their caches, and implement ``_fresh_process_state()``."""

    def _fresh_process_state(self) -> None:
        """Reset the per-process caches (called in each new process)."""
        raise NotImplementedError

    def _start_process_state(self) -> None:
        self._fresh_process_state()
        self.counters = IOCounters()
        self._owner_pid = os.getpid()

    def __getstate__(self) -> dict:
        # Caches are dropped from the pickle; the receiving process starts its own (see _own_process).
        state = self.__dict__.copy()
        state["_owner_pid"] = None
        return state

    def _own_process(self) -> None:
        """A forked worker inherits the parent's objects without pickling: it must not use their caches."""
        if self._owner_pid != os.getpid():
            self._start_process_state()


def skip_or_raise(error: Exception, on_bad_sample: str, what: str = "skipping bad sample") -> None:
    """data.on_bad_sample in one place: raise ``error``, or log it as a counted skip."""
    if on_bad_sample != "skip":
        raise error
    log.warning("%s: %s", what, error)
