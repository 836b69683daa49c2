"""benchmarks/bench_threads.py: a short run measures each (busy processes, threads) pair and writes its JSON."""

import json

import pytest

from benchmarks import bench_threads


@pytest.mark.slow
def test_a_short_run_measures_every_pair(tmp_path):
    out = tmp_path / "threads.json"
    argv = ["--threads", "1", "--busy", "0", "1", "--seconds", "0.3", "--repeats", "1", "--graphs", "2"]
    assert bench_threads.main([*argv, "--atoms", "40", "--out", str(out)]) == 0
    runs = json.loads(out.read_text())["runs"]
    assert sorted(runs) == ["busy0|threads1", "busy1|threads1"]
    assert all(run["steps_per_s"] > 0 and run["threads_all"] == [1] for run in runs.values())
