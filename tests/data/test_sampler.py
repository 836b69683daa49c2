"""Sampler: epoch seeding, rank partitioning, padding, block locality."""

import numpy as np
import pytest

from pecan.data.sampler import ShardAwareSampler


def shares(n, world, **kwargs):
    return [ShardAwareSampler(n, rank=r, world_size=world, **kwargs) for r in range(world)]


@pytest.mark.parametrize("mode", ["global", "block"])
def test_ranks_cover_everything_once_per_epoch(mode):
    shard_ids = np.repeat(np.arange(5), 7)
    samplers = shares(35, 3, shard_ids=shard_ids, mode=mode, seed=4)
    for epoch in (0, 1):
        for s in samplers:
            s.set_epoch(epoch)
        parts = [s.indices() for s in samplers]
        assert len({len(p) for p in parts}) == 1 and len(parts[0]) == len(samplers[0])
        combined = np.concatenate(parts)
        assert set(combined) == set(range(35)) and len(combined) == 36  # one pad


def test_epochs_differ_and_are_reproducible():
    a, b = ShardAwareSampler(50, seed=1), ShardAwareSampler(50, seed=1)
    first = a.indices().copy()
    a.set_epoch(1)
    assert not np.array_equal(first, a.indices())
    b.set_epoch(1)
    assert np.array_equal(a.indices(), b.indices())


def test_block_mode_keeps_shards_together():
    shard_ids = np.repeat(np.arange(4), 10)
    order = ShardAwareSampler(40, shard_ids=shard_ids, mode="block", seed=0).indices()
    runs = np.count_nonzero(np.diff(shard_ids[order]) != 0)
    assert runs == 3 and sorted(order) == list(range(40))


def test_evaluation_has_no_padding_and_keeps_order():
    parts = [s.indices() for s in shares(7, 2, shuffle=False, pad=False)]
    assert parts[0].tolist() == [0, 2, 4, 6] and parts[1].tolist() == [1, 3, 5]


def test_bad_mode():
    with pytest.raises(ValueError, match="block"):
        ShardAwareSampler(3, mode="random")
