"""benchmarks/prefetch.py: the read-ahead the out-of-core benchmark measures (a sampler that names each shard
about one window before its first sample, and the page-cache request for its pack)."""

import os

import numpy as np
import pytest

from benchmarks.prefetch import PagePrefetch, PrefetchingSampler

SHARDS = np.repeat(np.arange(24), 10)  # 24 shards of 10 samples


def ranks(world, mode="window", epoch=1, seed=5, **kwargs):
    samplers = [
        PrefetchingSampler(len(SHARDS), shard_ids=SHARDS, rank=r, world_size=world, mode=mode, seed=seed, **kwargs)
        for r in range(world)
    ]
    for sampler in samplers:
        sampler.set_epoch(epoch)
    return samplers


class Requests:
    """A prefetch callback that records, per call, the position in the iteration and the shard ids."""

    def __init__(self):
        self.calls, self.position = [], 0

    def __call__(self, shard_ids):
        self.calls.append((self.position, list(shard_ids)))


def iterate(sampler, requests):
    sampler.prefetch = requests
    read = []
    for index in sampler:
        read.append(index)
        requests.position += 1
    return read


@pytest.mark.parametrize("mode, window", [("window", 3), ("block", 1)])
def test_prefetch_asks_for_each_shard_about_one_window_before_its_first_sample(mode, window):
    sampler = ranks(2, mode=mode, window=window)[1]
    requests = Requests()
    read = iterate(sampler, requests)
    assert read == sampler.indices().tolist()  # prefetching does not change the order
    requested = {shard: position for position, shards in requests.calls for shard in shards}
    shards = SHARDS[read]
    assert sorted(requested) == sorted(set(shards.tolist()))  # each shard once
    for shard, position in requested.items():
        first = int(np.flatnonzero(shards == shard)[0])
        assert position <= first  # before its first sample is gathered
        assert first - position <= 10 * window  # but not more than one window ahead


def test_prefetch_follows_a_resume_and_stays_off_for_global_order():
    sampler = ranks(1, window=3)[0]
    sampler.skip_next(100)
    requests = Requests()
    read = iterate(sampler, requests)
    requested = [shard for _, shards in requests.calls for shard in shards]
    assert set(requested) == set(SHARDS[read].tolist())
    global_order = ranks(1, mode="global")[0]
    requests = Requests()
    iterate(global_order, requests)
    assert requests.calls == []  # every shard is read from the start: nothing to read ahead


def _read_bytes():
    line = next(x for x in open("/proc/self/io").read().splitlines() if x.startswith("read_bytes:"))
    return int(line.split()[1])


def _evict(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def _disk_bytes_to_read(path):
    before = _read_bytes()
    path.read_bytes()
    return _read_bytes() - before


def test_page_prefetch_reads_the_packs_of_the_given_shards_into_the_page_cache(tmp_path):
    paths = []
    for i in range(3):
        path = tmp_path / f"p{i}.pecanpack"
        path.write_bytes(os.urandom(1 << 20))
        paths.append(path)
    _evict(paths[0])
    if _disk_bytes_to_read(paths[0]) == 0:
        pytest.skip("this file system does not report block reads in /proc/self/io (e.g. tmpfs)")
    for path in paths:
        _evict(path)
    prefetch = PagePrefetch([paths[0], None, paths[2]])
    prefetch(np.array([0, 1]))  # shard 1 has no pack (skipped): nothing to read
    prefetch.join()
    assert prefetch.requested == 1
    assert _disk_bytes_to_read(paths[0]) == 0  # already in the page cache
    assert _disk_bytes_to_read(paths[2]) > 0  # not asked for: still read from disk
