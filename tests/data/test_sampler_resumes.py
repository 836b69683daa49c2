"""Two successive mid-epoch resumes, each on another world size: every sample of the epoch's order is trained
exactly once over the three parts (the samplers' own split, as the trainer drives them: the parts seen before
are passed on, each as (world size, samples per rank))."""

from collections import Counter

import numpy as np
import pytest

from pecan.data.sampler import MODES, ShardAwareSampler


def sampler(mode: str, rank: int, world: int) -> ShardAwareSampler:
    samples = 103
    shard_ids = np.repeat(np.arange(7), 15)[:samples]
    complex_codes = np.arange(samples) // 4
    made = ShardAwareSampler(
        samples, shard_ids=shard_ids, complex_codes=complex_codes, rank=rank, world_size=world, mode=mode, seed=3
    )
    made.set_epoch(2)
    return made


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("worlds, done", [((2, 3, 1), (9, 7)), ((3, 2, 1), (5, 11)), ((4, 1, 2), (3, 30))])
def test_two_resumes_on_other_world_sizes_train_each_sample_once(mode, worlds, done):
    first, second, third = worlds
    trained: Counter = Counter()
    seen: list[tuple[int, int]] = []
    for world, steps in ((first, done[0]), (second, done[1])):
        for rank in range(world):
            part = sampler(mode, rank, world)
            part.continue_after(seen)
            share = part.indices()
            assert len(share) >= steps, "the test's step counts stay inside every share"
            trained.update(share[:steps].tolist())
        seen = [*seen, (world, steps)]
    for rank in range(third):
        last = sampler(mode, rank, third)
        last.continue_after(seen)
        share = last.indices()
        # The last part trains its shares to the end; with several ranks the shares are padded to one length
        # with repeats of the order's first samples, which are no samples of their own: count those once.
        trained.update(share.tolist())
    padding = sum(trained.values()) - sampler(mode, 0, 1).epoch_size
    if padding:
        assert third > 1 and padding < third
        extra = trained - Counter(sampler(mode, 0, 1).indices().tolist())
        assert sum(extra.values()) == padding
        trained -= extra
    expected = Counter(sampler(mode, 0, 1).indices().tolist())
    assert trained == expected
