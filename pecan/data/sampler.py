"""Distributed, shard-aware, epoch-seeded sampling (a DistributedSampler that knows about shards)."""

from __future__ import annotations

import copy
import math
from typing import Iterable, Iterator, Optional

import numpy as np
import torch

MODES = ("global", "block", "window", "complex", "balanced")
GROUPED = ("complex", "balanced")  # modes that order by complex (complex_codes)
# Shards per window of ``mode="window"``: the pages a rank touches at once are about this many packs.
WINDOW_BLOCKS = 8


class ShardAwareSampler(torch.utils.data.Sampler[int]):
    """Each rank's share of one epoch's order; ``set_epoch`` reshuffles identically on every rank.

    ``mode="global"`` is a uniform permutation. ``mode="block"`` shuffles the order of shards and the
    samples inside each shard, then gives each rank a contiguous run, so a rank reads few shards at a
    time (for storage that prefers locality). ``mode="complex"`` does the same with complexes instead of
    shards (``complex_codes``), so a batch holds most poses of one or two complexes: the pairs a per-complex
    ranking loss needs (with random batches few poses of one complex ever share a batch). ``mode="balanced"``
    is complex mode with the same number of draws from every complex (the mean poses per complex, rounded):
    a complex with many poses is subsampled, one with few is drawn again, so each complex weighs the same in
    an epoch whatever its pose count (the epoch length stays about the sample count). Training pads every
    rank to the same length (DDP needs equal step counts); evaluation (``pad=False``) covers each sample exactly once.
    """

    def __init__(
        self,
        num_samples: int,
        *,
        shard_ids: Optional[np.ndarray] = None,
        complex_codes: Optional[np.ndarray] = None,
        rank: int = 0,
        world_size: int = 1,
        shuffle: bool = True,
        mode: str = "global",
        seed: int = 0,
        pad: bool = True,
        window: int = WINDOW_BLOCKS,
    ) -> None:
        if mode not in MODES:
            raise ValueError(f"shuffle mode must be one of {', '.join(MODES)}, got {mode!r}")
        if mode in GROUPED and complex_codes is None:
            raise ValueError(f"shuffle mode {mode!r} needs complex_codes (the complex of every sample)")
        if window < 1:
            raise ValueError(f"shuffle window must be at least 1 shard, got {window}")
        self.num_samples, self.rank, self.world_size = num_samples, rank, world_size
        self.shard_ids = None if shard_ids is None else np.asarray(shard_ids)
        blocks = complex_codes if mode in GROUPED else shard_ids
        self.block_ids = np.zeros(num_samples, dtype=np.int64) if blocks is None else np.asarray(blocks)
        self.shuffle, self.mode, self.seed, self.pad, self.window = shuffle, mode, seed, pad, window
        self.epoch = 0
        self.skip = 0
        # Parts of this epoch seen under another world size or batch size: [(world_size, per_rank)] each.
        self.seen_before: list[tuple[int, int]] = []
        # Samples one epoch draws: the data size, except balanced mode's groups x draws per group.
        self.draws = 0
        self.epoch_size = num_samples
        if mode == "balanced" and shuffle and num_samples:
            groups = len(np.unique(self.block_ids))
            self.draws = max(1, round(num_samples / groups))
            self.epoch_size = groups * self.draws

    def skip_next(self, count: int) -> None:
        """The next pass starts after the first ``count`` indices of this rank's share (a mid-epoch resume);
        ``len`` stays the full share, so step counts and schedules do not change."""
        self.skip = count

    def continue_after(self, seen_before: list[tuple[int, int]]) -> None:
        """This epoch's order without the samples earlier parts saw, each ``(world_size, per_rank)``: the first
        ``per_rank`` indices of every rank's share under that world size (a resume on another node count).
        What is left is split over this sampler's world size; ``len`` becomes this rank's share of it."""
        self.seen_before = [(int(world), int(count)) for world, count in seen_before]

    def set_epoch(self, epoch: int) -> None:
        """Select the epoch whose order to produce (every sample of it: no part seen before)."""
        self.epoch = epoch
        self.seen_before = []

    def _order(self) -> np.ndarray:
        if not self.shuffle:
            return np.arange(self.num_samples)
        rng = np.random.default_rng([self.seed, self.epoch])
        if self.mode == "global":
            return rng.permutation(self.num_samples)
        # One stable sort groups the samples of each block: O(S log S), not a scan of all samples per block.
        order = np.argsort(self.block_ids, kind="stable")
        starts = np.flatnonzero(np.r_[True, np.diff(self.block_ids[order]) != 0])
        groups = np.split(order, starts[1:])
        if self.draws:
            groups = [self._draw(rng, group) for group in groups]
        groups = [groups[g] for g in rng.permutation(len(groups))]
        if self.mode == "window":  # the shuffled shards, W at a time, become the groups
            groups = [np.concatenate(groups[w : w + self.window]) for w in range(0, len(groups), self.window)]
        return np.concatenate([rng.permutation(group) for group in groups])

    def _draw(self, rng: np.random.Generator, group: np.ndarray) -> np.ndarray:
        """``self.draws`` samples of one group: a subset when it has enough, else all of it plus repeats."""
        if len(group) >= self.draws:
            return rng.choice(group, self.draws, replace=False)
        return np.concatenate([group, rng.choice(group, self.draws - len(group), replace=True)])

    def _strided(self) -> bool:
        """Whether a rank's share is every world_size-th index (else a contiguous run of the order)."""
        return self.mode == "global" or not self.shuffle

    def _unseen(self, size: int, world_size: int, per_rank: int) -> np.ndarray:
        """Positions 0..size-1 of an order whose share's first ``per_rank`` indices every rank of
        ``world_size`` saw: the positions none saw (padding repeats are not samples and are dropped)."""
        positions = np.arange(size)
        if self._strided():
            return positions >= per_rank * world_size
        return positions % math.ceil(size / world_size) >= per_rank

    def remaining_size(self) -> int:
        """How many samples of this epoch the parts in ``seen_before`` left (all of them when none)."""
        size = self.epoch_size
        for world_size, per_rank in self.seen_before:
            size = int(self._unseen(size, world_size, per_rank).sum())
        return size

    def indices(self) -> np.ndarray:
        """This rank's indices for the current epoch."""
        order = self._order()
        if not self.pad:
            return order[self.rank :: self.world_size]
        for world_size, per_rank in self.seen_before:
            order = order[self._unseen(len(order), world_size, per_rank)]
        if not len(order):
            return order
        per_rank = math.ceil(len(order) / self.world_size)
        total = per_rank * self.world_size
        if total > len(order):
            order = np.concatenate([order, np.resize(order, total - len(order))])
        if not self._strided():
            return order[self.rank * per_rank : (self.rank + 1) * per_rank]
        return order[self.rank : total : self.world_size]

    def shards_read(self, ranks: Iterable[int]) -> np.ndarray:
        """The shard ids that ``ranks`` read in the rest of this epoch, sorted: what one node must have at
        hand for the epoch (pecan.data.staging.stage_subset)."""
        if self.shard_ids is None:
            raise ValueError("shards_read needs shard_ids (the shard of every sample)")
        sampler = copy.copy(self)
        read = [np.zeros(0, dtype=np.int64)]
        for rank in ranks:
            sampler.rank = rank
            read.append(self.shard_ids[sampler.indices()])
        return np.unique(np.concatenate(read))

    def __iter__(self) -> Iterator[int]:
        skip, self.skip = self.skip, 0
        return iter(self.indices()[skip:].tolist())

    def __len__(self) -> int:
        if self.pad:
            return math.ceil(self.remaining_size() / self.world_size)
        return len(range(self.rank, self.num_samples, self.world_size))
