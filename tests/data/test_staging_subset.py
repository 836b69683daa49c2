"""Staging one node's share: under the window order a node copies only the packs its ranks read this epoch,
removes the last epoch's other copies first, and so stages a data set larger than its local disk."""

import numpy as np
import pytest

from pecan.data import staging
from pecan.data.sampler import ShardAwareSampler

FILES, PER_FILE, SIZE = 8, 5, 12 * 1024  # 8 "packs" of 12 KiB: 96 KiB in all


@pytest.fixture
def sources(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    paths = []
    for i in range(FILES):
        path = data / f"s{i}.pecanpack"
        path.write_bytes(bytes([i]) * SIZE)
        paths.append(path)
    return paths


def node_share(sources, epoch, ranks=(0, 1), world=4):
    """The packs ranks 0 and 1 of four (one node of two) read in ``epoch`` under window order."""
    sampler = ShardAwareSampler(
        FILES * PER_FILE, shard_ids=np.repeat(np.arange(FILES), PER_FILE), world_size=world, mode="window", window=2
    )
    sampler.set_epoch(epoch)
    return {sources[i] for i in sampler.shards_read(ranks)}


def test_a_node_stages_only_its_share_and_reads_the_rest_in_place(tmp_path, sources):
    needed = node_share(sources, 0)
    assert len(needed) <= FILES // 2 + 1
    report = staging.stage_subset(sources, needed, tmp_path / "stage")
    staged = sorted(p for p in (tmp_path / "stage").iterdir() if p.suffix == ".pecanpack")
    assert len(staged) == len(needed) == report.files_copied and report.bytes_copied == SIZE * len(needed)
    for source in sources:
        target = report.mapping[str(source)]
        if source in needed:
            assert target == str(staging.staged_path(source, tmp_path / "stage"))
        else:
            assert target == str(source)
        assert open(target, "rb").read() == source.read_bytes()


def test_the_next_epoch_removes_the_old_share_and_reuses_what_it_keeps(tmp_path, sources):
    first, second = node_share(sources, 0), node_share(sources, 1)
    assert first != second
    staging.stage_subset(sources, first, tmp_path / "stage")
    report = staging.stage_subset(sources, second, tmp_path / "stage")
    left = {p.name for p in (tmp_path / "stage").iterdir() if p.suffix == ".pecanpack"}
    assert left == {staging.staged_path(s, tmp_path / "stage").name for s in second}
    assert report.files_reused == len(first & second) and report.files_copied == len(second - first)


def test_a_share_fits_a_disk_the_whole_set_does_not(tmp_path, sources, mounts):
    disk = mounts.tmpfs(tmp_path / "local", size="64k")  # 96 KiB of packs, 64 KiB of local disk
    whole = staging.stage(sources, disk)
    assert whole.fallback and "ENOSPC" in whole.fallback
    report = staging.stage_subset(sources, node_share(sources, 0), disk)
    assert report.fallback is None and report.files_copied == len(node_share(sources, 0))


def test_a_needed_file_that_is_not_a_source_is_an_error(tmp_path, sources):
    with pytest.raises(ValueError, match="not sources"):
        staging.stage_subset(sources[:2], {sources[3]}, tmp_path / "stage")
