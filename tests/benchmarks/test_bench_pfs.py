"""benchmarks/bench_pfs.py: a smoke run reads each level from local disk and through the slow mount, counts the
mount's metadata ops per sample, and times a 2-rank run on both."""

import json
import os

import pytest

from benchmarks import bench_pfs
from benchmarks.slowfs import unavailable

pytestmark = pytest.mark.skipif(unavailable() is not None, reason=f"slowfs cannot mount here: {unavailable()}")


@pytest.mark.slow
@pytest.mark.multiprocess
def test_a_smoke_run_counts_the_storm_of_reopen_and_none_for_packs(tmp_path):
    out = tmp_path / "pfs.json"
    argv = ["--root", str(tmp_path / "root"), "--shards", "2", "--complexes-per-shard", "2", "--samples", "24"]
    argv += ["--workers", "1", "--repeats", "1", "--latency-ms", "0.2", "--levels", "reopen", "packed_staged"]
    assert bench_pfs.main([*argv, "--ranks", "2", "--rank-levels", "reopen", "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    assert not os.path.ismount(tmp_path / "root-mnt")
    (latency,) = result["latencies"]
    rows = {(row["storage"], row["level"]): row for row in latency["rows"]}
    assert sorted(rows) == [(storage, level) for storage in ("local", "pfs") for level in ("packed_staged", "reopen")]
    assert all(row["samples"] == 24 and len(row["samples_per_s"]) == 1 for row in rows.values())
    # reopen opens, stats and closes its shard through the server for every sample; staged packs never touch it
    reopen = rows["pfs", "reopen"]
    assert reopen["metadata_ops_per_sample_steady"] >= 3
    assert reopen["first_epoch_s"] >= 24 * 3 * 0.0002
    assert rows["pfs", "packed_staged"]["metadata_ops_per_sample_steady"] == 0
    assert rows["local", "reopen"]["metadata_ops_per_sample_steady"] == 0  # local disk: nothing counted
    assert latency["cold"]["pfs"]["pack_s"] > 0 and latency["cold"]["pfs"]["stage_s"] > 0
    ranks = {(row["storage"], row["level"]): row for row in latency["ranks"]}
    assert sorted(ranks) == [("local", "reopen"), ("pfs", "reopen")]
    assert all(len(row["per_rank_samples_per_s"]) == 2 for row in ranks.values())
    assert ranks["pfs", "reopen"]["metadata_ops"] >= 3 * 24  # both ranks' reads went through the one server
