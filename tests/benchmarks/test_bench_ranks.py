"""benchmarks/bench_ranks.py: a smoke run converts (and redocks) one complex under 2 ids at 1 and 2 ranks and finds
the same output."""

import importlib.util
import json

import pytest

pytest.importorskip("rdkit", reason="the benchmark converts poses: needs the convert extra")
pytest.importorskip("prolif", reason="the benchmark converts poses: needs the convert extra")

from benchmarks import bench_ranks  # noqa: E402


def test_the_outputs_differ_when_a_file_does(tmp_path):
    one, two = tmp_path / "one", tmp_path / "two"
    for directory in (one, two):
        (directory / ".ranks").mkdir(parents=True)
        (directory / "failures.csv").write_text("complex_id,reason\n")
        (directory / ".ranks" / "rank0.json").write_text(directory.name)
    assert bench_ranks.differences(one, two) == []
    (two / "failures.csv").write_text("complex_id,reason\nx,bad\n")
    (two / "extra.csv").write_text("")
    assert "file lists differ" in bench_ranks.differences(one, two)[0]
    (two / "extra.csv").unlink()
    assert bench_ranks.differences(one, two) == ["failures.csv differs"]


def can_redock() -> bool:
    """Whether the dock extra (vina, meeko) is installed: the smoke run then times pecan redock too."""
    return all(importlib.util.find_spec(name) is not None for name in ("vina", "meeko"))


@pytest.mark.slow
@pytest.mark.multiprocess
def test_a_smoke_run_times_both_tools_at_both_rank_counts_and_finds_the_same_output(tmp_path):
    """One complex under 2 ids: convert (and redock, with the dock extra) at 1 and 2 ranks, redock's times left
    out of the comparison."""
    out = tmp_path / "ranks.json"
    redock = can_redock()
    argv = ["--complexes", "1", "--copies", "2", "--out", str(out)] + (["--redock"] if redock else [])
    assert bench_ranks.main(argv) == 0
    result = json.loads(out.read_text())
    tools = ["convert", "redock"] if redock else ["convert"]
    assert [(run["tool"], run["ranks"]) for run in result["runs"]] == [(t, r) for t in tools for r in (1, 2)]
    assert result["complexes"] == 2 and result["same_output"] is True
    assert result["differences"] == {f"{tool} 1_vs_2": [] for tool in tools}
    assert result["cpu"] and result["cpus"] >= 1
    assert any(name.endswith(".hdf5") for name in result["files"]) and "failures.csv" in result["files"]
    for run in result["runs"]:
        assert run["poses"] > 0 and run["wall_s"] > 0 and run["cpu_s"] > 0
        assert run["poses_per_cpu_s"] == pytest.approx(run["poses"] / run["cpu_s"])
        assert run["load_before"] >= 0
    for tool in tools:
        one, two = (run["poses"] for run in result["runs"] if run["tool"] == tool)
        assert one == two


def test_times_named_varying_are_left_out(tmp_path):
    one, two = tmp_path / "one", tmp_path / "two"
    for directory, seconds in ((one, 1.5), (two, 2.5)):
        directory.mkdir()
        (directory / "redock.csv").write_text(f"complex_id,poses,seconds\na,3,{seconds}\n")
        (directory / "a.json").write_text(json.dumps({"poses": 3, "seconds": seconds}))
    assert bench_ranks.differences(one, two) == ["a.json differs", "redock.csv differs"]
    assert bench_ranks.differences(one, two, ("seconds",)) == []
