"""The Dask engine's ordering (longest first, ties in plan order) and its start-up errors; the engine on a
real cluster with a killed worker is tests/redock/test_redock_dask.py."""

import pytest

from pecan.runtime.engine_dask import DaskEngine, longest_first, priorities


def test_longest_first_keeps_plan_order_among_equal_costs():
    assert longest_first(["a", "b", "c", "d"], [1.0, 5.0, 1.0, 3.0]) == ["b", "d", "a", "c"]
    assert priorities([1.0, 5.0, 1.0, 3.0]) == [2, 4, 1, 3]  # higher runs first
    with pytest.raises(ValueError, match="2 costs for 3 jobs"):
        longest_first(["a", "b", "c"], [1.0, 2.0])


def test_no_jobs_needs_no_cluster(tmp_path):
    with DaskEngine(tmp_path / "none.json").results_of(len, []) as results:
        assert list(results) == []


def test_a_missing_scheduler_file_is_named(tmp_path):
    pytest.importorskip("distributed", reason="needs the dist extra: pip install -e '.[dist]'")
    with pytest.raises(ValueError, match=r"--scheduler-file .*none.json: no such file"):
        with DaskEngine(tmp_path / "none.json").results_of(len, [1]):
            pass
