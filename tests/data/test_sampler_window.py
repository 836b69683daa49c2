"""Sampler, window mode: shuffled shards, samples shuffled within each window of W shards (data larger than
memory are read about once per epoch), exact under a resume on another world size, deterministic."""

import numpy as np
import pytest

from pecan.data.sampler import ShardAwareSampler

SHARDS = np.repeat(np.arange(24), 10)  # 24 shards of 10 samples


def ranks(world, mode="window", epoch=1, seed=5, **kwargs):
    samplers = [
        ShardAwareSampler(len(SHARDS), shard_ids=SHARDS, rank=r, world_size=world, mode=mode, seed=seed, **kwargs)
        for r in range(world)
    ]
    for sampler in samplers:
        sampler.set_epoch(epoch)
    return samplers


@pytest.mark.parametrize("world", [1, 3, 4, 7])
def test_ranks_cover_every_sample_once_per_epoch(world):
    combined = np.concatenate([s.indices() for s in ranks(world, window=4)])
    assert set(combined.tolist()) == set(range(len(SHARDS)))
    assert len(combined) - len(SHARDS) < world  # only the padding repeats


def test_each_window_holds_whole_shards_and_mixes_them():
    order = ranks(1, window=4)[0].indices()
    for start in range(0, len(order), 40):
        shards = SHARDS[order[start : start + 40]]
        assert len(set(shards.tolist())) == 4  # the window's four shards, whole
        assert all(np.bincount(shards)[s] == 10 for s in set(shards.tolist()))
        runs = 1 + np.count_nonzero(np.diff(shards))
        assert runs > 8  # interleaved, not four sorted blocks


def test_a_window_of_one_shard_is_the_block_order():
    window = ranks(1, window=1)[0].indices()
    block = ranks(1, mode="block")[0].indices()
    assert np.array_equal(window, block)


def test_orders_are_reproducible_and_differ_by_epoch_and_seed():
    first = ranks(2, window=4)[1].indices()
    assert np.array_equal(first, ranks(2, window=4)[1].indices())
    assert not np.array_equal(first, ranks(2, window=4, epoch=2)[1].indices())
    assert not np.array_equal(first, ranks(2, window=4, seed=6)[1].indices())


def test_a_rank_reads_a_few_shards_at_a_time():
    for sampler in ranks(3, window=4):
        shards = SHARDS[sampler.indices()]
        # Over any 40 consecutive samples a rank touches at most two windows' shards (it may cross one border).
        assert max(len(set(shards[i : i + 40].tolist())) for i in range(len(shards) - 40)) <= 8


def test_shards_read_is_the_node_s_share_of_the_shards():
    world = ranks(4, window=2)
    node = world[0].shards_read([0, 1])
    read = np.unique(SHARDS[np.concatenate([world[0].indices(), world[1].indices()])])
    assert np.array_equal(node, read)
    assert len(node) <= 12 + 2  # half of the shards, plus at most one window split at the border
    every = ranks(4, mode="global")[0].shards_read([0, 1])
    assert len(every) == 24  # a uniform shuffle gives every node samples of every shard


def test_shards_read_follows_a_resume_and_needs_shard_ids():
    sampler = ranks(2, window=2)[0]
    sampler.continue_after([(2, 60)])
    assert np.array_equal(sampler.shards_read([0]), np.unique(SHARDS[sampler.indices()]))
    assert len(sampler.shards_read([0])) < len(ranks(2, window=2)[0].shards_read([0]))
    with pytest.raises(ValueError, match="shard_ids"):
        ShardAwareSampler(10, mode="global").shards_read([0])


def test_no_reshuffling_order_keeps_a_node_on_a_subset_across_epochs():
    # Why staging follows the epoch: every order reshuffles shards over ranks each epoch, so over a few
    # epochs one node of four reads nearly every shard (24 of 24 here by epoch 6).
    union = set()
    for epoch in range(6):
        union |= set(ranks(4, window=2, epoch=epoch)[0].shards_read([0]).tolist())
    assert len(union) > 18


def test_a_window_below_one_shard_is_an_error():
    with pytest.raises(ValueError, match="window"):
        ShardAwareSampler(10, mode="window", window=0)


@pytest.mark.parametrize("before, after", [(4, 3), (2, 5), (3, 1)])
def test_a_mid_epoch_resume_on_another_world_size_reads_each_sample_once(before, after):
    seen = np.concatenate([s.indices()[:17] for s in ranks(before, window=3)])
    rest = ranks(after, window=3)
    for sampler in rest:
        sampler.continue_after([(before, 17)])
    combined = np.concatenate([s.indices() for s in rest])
    assert not set(combined.tolist()) & set(seen.tolist())
    assert set(combined.tolist()) | set(seen.tolist()) == set(range(len(SHARDS)))
    assert len(combined) - rest[0].remaining_size() < after  # only the padding repeats


def test_a_mid_epoch_resume_on_the_same_world_size_continues_the_share():
    full = ranks(3, window=3)[2]
    resumed = ranks(3, window=3)[2]
    resumed.skip_next(11)
    assert list(resumed) == full.indices()[11:].tolist()
    assert len(resumed) == len(full)
