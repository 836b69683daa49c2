"""Read-ahead of packs for benchmarks/bench_outofcore.py's "+prefetch" orders: a sampler that names each shard
about one window before its first sample, and a callback that asks the kernel to read that shard's pack into
the page cache (posix_fadvise WILLNEED, on a background thread).

Measured there (BENCHMARKS.md, "Data far larger than memory"), it read 1.8x the pack bytes and gave no steady
speed-up, so the product's sampler has no such hook; it is kept here to repeat the measurement."""

from __future__ import annotations

import logging
import math
import os
import threading
from pathlib import Path
from typing import Callable, Iterator, Optional

import numpy as np

from pecan.data.sampler import ShardAwareSampler

log = logging.getLogger(__name__)


class PrefetchingSampler(ShardAwareSampler):
    """``ShardAwareSampler`` that calls ``prefetch`` with the ids of the shards a rank is about to read (block
    and window orders; shard_ids needed), about one window (block: one shard) of samples before each shard's
    first sample. The order itself is the parent's."""

    prefetch: Optional[Callable[[np.ndarray], None]] = None

    def __iter__(self) -> Iterator[int]:
        if self.prefetch is None or self.mode not in ("block", "window") or not self.shuffle:
            return super().__iter__()
        skip, self.skip = self.skip, 0
        return self._prefetching(self.indices()[skip:])

    def _prefetching(self, indices: np.ndarray) -> Iterator[int]:
        shards = self.shard_ids[indices]
        shard_list, first = np.unique(shards, return_index=True)
        trigger = np.maximum(first - self.window_samples(), 0)
        by_trigger = np.argsort(trigger, kind="stable")
        next_call = 0
        for position, index in enumerate(indices.tolist()):
            if next_call < len(by_trigger) and trigger[by_trigger[next_call]] <= position:
                end = next_call + int(np.searchsorted(trigger[by_trigger[next_call:]], position, side="right"))
                self.prefetch(shard_list[by_trigger[next_call:end]])
                next_call = end
            yield index

    def window_samples(self) -> int:
        """Samples in one window of the order (block: one shard), on average."""
        shards = len(np.unique(self.shard_ids)) or 1
        return math.ceil(self.num_samples / shards) * (self.window if self.mode == "window" else 1)


class PagePrefetch:
    """``PrefetchingSampler.prefetch`` for packs: ask the kernel to read the packs of the given shard ids into
    the page cache now (posix_fadvise WILLNEED, on a background thread), so a reader that gathers from the
    current window does not wait on one synchronous page-cache miss per page of the next."""

    def __init__(self, pack_paths: list[Optional[Path]]) -> None:
        self.pack_paths = pack_paths
        self.requested = 0
        self._last: Optional[threading.Thread] = None

    def __call__(self, shard_ids) -> None:
        paths = [self.pack_paths[i] for i in shard_ids if self.pack_paths[i] is not None]
        self.requested += len(paths)
        self._last = threading.Thread(target=_will_need, args=(paths,), daemon=True)
        self._last.start()

    def join(self) -> None:
        """Wait until the last request was handed to the kernel."""
        if self._last is not None:
            self._last.join()


def _will_need(paths: list[Path]) -> None:
    for path in paths:
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError as err:  # the reader opens it too, and reports the error there
            log.debug("prefetch of %s skipped: %s", path, err)
            continue
        try:
            os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_WILLNEED)
        finally:
            os.close(fd)
