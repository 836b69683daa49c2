"""Sampler partitioning, written out by hand for small cases."""

import numpy as np

from pecan.data.sampler import ShardAwareSampler


def test_unshuffled_padded_ranks_interleave_and_wrap():
    parts = [ShardAwareSampler(5, rank=r, world_size=2, shuffle=False).indices().tolist() for r in range(2)]
    # 5 samples padded to 6 by repeating the start of the order.
    assert parts == [[0, 2, 4], [1, 3, 0]]
    assert [len(ShardAwareSampler(5, rank=r, world_size=2, shuffle=False)) for r in range(2)] == [3, 3]


def test_unpadded_lengths_match_indices():
    for world in (1, 2, 3):
        for rank in range(world):
            sampler = ShardAwareSampler(7, rank=rank, world_size=world, shuffle=False, pad=False)
            assert len(sampler) == len(sampler.indices()) == len(range(rank, 7, world))
            assert list(sampler) == list(range(rank, 7, world))


def test_block_mode_gives_each_rank_a_contiguous_run():
    shard_ids = np.repeat(np.arange(4), 6)
    order = np.concatenate(
        [
            ShardAwareSampler(24, shard_ids=shard_ids, mode="block", seed=3, rank=r, world_size=2).indices()
            for r in range(2)
        ]
    )
    full = ShardAwareSampler(24, shard_ids=shard_ids, mode="block", seed=3).indices()
    assert order.tolist() == full.tolist()
    # Each rank reads exactly two whole shards.
    for part in (order[:12], order[12:]):
        assert len(set(shard_ids[part])) == 2


def test_seed_changes_the_order():
    a = ShardAwareSampler(30, seed=0).indices()
    b = ShardAwareSampler(30, seed=1).indices()
    assert sorted(a) == sorted(b) == list(range(30)) and a.tolist() != b.tolist()


def test_unshuffled_ignores_epoch():
    sampler = ShardAwareSampler(6, shuffle=False)
    sampler.set_epoch(3)
    assert sampler.indices().tolist() == list(range(6))


def test_global_mode_mixes_shards():
    """Global mode is one uniform permutation: consecutive samples come from different shards, unlike block."""
    shard_ids = np.repeat(np.arange(4), 10)
    order = ShardAwareSampler(40, shard_ids=shard_ids, mode="global", seed=0).indices()
    assert sorted(order) == list(range(40))
    assert np.count_nonzero(np.diff(shard_ids[order]) != 0) > 10  # block mode would give exactly 3


def test_complex_mode_keeps_each_complex_contiguous_whatever_the_shards():
    """Complexes interleaved in one shard: complex mode groups them (a batch holds whole complexes), block cannot."""
    complexes = np.tile(np.arange(5), 4)  # 20 samples, complex ids 0..4 interleaved
    sampler = ShardAwareSampler(20, shard_ids=np.zeros(20, int), complex_codes=complexes, mode="complex", seed=2)
    order = sampler.indices()
    assert sorted(order) == list(range(20))
    runs = complexes[order]
    assert np.count_nonzero(np.diff(runs) != 0) == 4  # five runs, one per complex
    sampler.set_epoch(1)
    assert sampler.indices().tolist() != order.tolist()  # reshuffled per epoch


def test_complex_mode_without_complex_ids_is_an_error():
    import pytest

    with pytest.raises(ValueError, match="complex_codes"):
        ShardAwareSampler(4, mode="complex")


def test_block_order_is_unchanged_by_the_grouping_rewrite():
    """The order block mode gave before groups were built by one sort (a resumed run must see the same order)."""
    shard_ids = np.array([2, 0, 1, 2, 0, 1, 2, 0])
    rng = np.random.default_rng([5, 0])
    shards = rng.permutation(np.unique(shard_ids))
    before = np.concatenate([rng.permutation(np.flatnonzero(shard_ids == s)) for s in shards])
    now = ShardAwareSampler(8, shard_ids=shard_ids, mode="block", seed=5).indices()
    assert now.tolist() == before.tolist()


def test_balanced_mode_draws_the_same_count_from_every_complex():
    """Complexes of 1, 3 and 8 poses: 12 samples / 3 complexes = 4 draws each, grouped by complex."""
    complexes = np.array([0] + [1] * 3 + [2] * 8)
    sampler = ShardAwareSampler(12, complex_codes=complexes, mode="balanced", seed=4)
    order = sampler.indices()
    assert len(order) == len(sampler) == 12
    assert np.bincount(complexes[order]).tolist() == [4, 4, 4]
    assert np.count_nonzero(np.diff(complexes[order]) != 0) == 2  # three contiguous runs
    assert set(order[complexes[order] == 1]) == {1, 2, 3}  # a small complex: every pose, then repeats
    assert len(set(order[complexes[order] == 2])) == 4  # a large one: 4 distinct of its 8
    sampler.set_epoch(1)
    assert sampler.indices().tolist() != order.tolist()


def test_balanced_mode_pads_ranks_to_its_own_epoch_length_and_evaluation_is_unchanged():
    complexes = np.array([0, 0, 0, 0, 0, 1, 2])  # 7 samples, 3 complexes: 2 draws each, 6 per epoch
    parts = [
        ShardAwareSampler(7, complex_codes=complexes, mode="balanced", rank=r, world_size=2, seed=1).indices()
        for r in range(2)
    ]
    assert [len(p) for p in parts] == [3, 3]
    assert np.bincount(complexes[np.concatenate(parts)]).tolist() == [2, 2, 2]
    evaluation = ShardAwareSampler(7, complex_codes=complexes, mode="balanced", shuffle=False, pad=False)
    assert list(evaluation) == list(range(7))
