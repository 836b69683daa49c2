"""Sampler: the rest of an epoch after part of it ran under another world size or batch size (a resume on
another node count) holds every sample the earlier part did not see, once, split over the new ranks."""

import numpy as np
import pytest

from pecan.data.sampler import ShardAwareSampler

COMPLEXES = np.arange(46) // 5  # 46 samples: uneven over 2 and 4 ranks, so shares are padded


def shares(world, **kwargs):
    samplers = [ShardAwareSampler(46, rank=r, world_size=world, seed=3, **kwargs) for r in range(world)]
    for sampler in samplers:
        sampler.set_epoch(2)
    return samplers


def seen_by(samplers, per_rank):
    return np.concatenate([s.indices()[:per_rank] for s in samplers])


@pytest.mark.parametrize("mode", ["global", "block", "window", "complex", "balanced"])
@pytest.mark.parametrize("before, after", [(2, 1), (1, 3), (4, 2)])
def test_the_rest_of_an_epoch_is_every_unseen_sample_once(mode, before, after):
    kwargs = {"mode": mode, "shard_ids": COMPLEXES % 3, "complex_codes": COMPLEXES}
    first = shares(before, **kwargs)
    seen = seen_by(first, 5)
    rest = shares(after, **kwargs)
    for sampler in rest:
        sampler.continue_after([(before, 5)])
    parts = [s.indices() for s in rest]
    assert len({len(p) for p in parts}) == 1 and len(parts[0]) == len(rest[0])
    combined = np.concatenate(parts)
    if mode == "balanced":  # draws repeat samples on purpose: count positions of the epoch, not samples
        assert rest[0].remaining_size() == len(rest[0]._order()) - len(seen) <= len(combined)
        return
    assert not set(combined.tolist()) & set(seen.tolist())
    assert set(combined.tolist()) | set(seen.tolist()) == set(range(46))
    assert rest[0].remaining_size() == 46 - len(set(seen.tolist()))
    assert len(combined) - rest[0].remaining_size() < after  # only the padding repeats


def test_a_second_split_of_the_rest_continues_where_the_first_stopped():
    first = seen_by(shares(2), 5)
    middle = shares(3)
    for sampler in middle:
        sampler.continue_after([(2, 5)])
    second = seen_by(middle, 2)
    last = shares(1)[0]
    last.continue_after([(2, 5), (3, 2)])
    combined = np.concatenate([first, second, last.indices()])
    assert sorted(combined.tolist()) == list(range(46))


def test_a_new_epoch_forgets_the_parts_seen_before():
    sampler = shares(1)[0]
    sampler.continue_after([(2, 5)])
    assert len(sampler) == 36
    sampler.set_epoch(3)
    assert len(sampler) == 46 and sorted(sampler.indices().tolist()) == list(range(46))
