"""benchmarks/bench_ranks.py: a smoke run converts 2 realdock complexes at 1 and 2 ranks and finds the same output."""

import json

import pytest

pytest.importorskip("rdkit", reason="the benchmark converts poses: needs the convert extra")
pytest.importorskip("prolif", reason="the benchmark converts poses: needs the convert extra")

from benchmarks import bench_ranks  # noqa: E402


@pytest.mark.slow
@pytest.mark.multiprocess
def test_a_smoke_run_times_both_rank_counts_and_finds_the_same_output(tmp_path):
    out = tmp_path / "ranks.json"
    assert bench_ranks.main(["--complexes", "2", "--copies", "1", "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    assert result["complexes"] == 2 and result["same_output"] is True
    assert result["differences"] == {"convert 1_vs_2": []}
    assert result["cpu"] and result["cpus"] >= 1
    assert any(name.endswith(".hdf5") for name in result["files"]) and "failures.csv" in result["files"]
    assert [run["ranks"] for run in result["runs"]] == [1, 2]
    for run in result["runs"]:
        assert run["poses"] > 0 and run["wall_s"] > 0 and run["cpu_s"] > 0
        assert run["poses_per_cpu_s"] == pytest.approx(run["poses"] / run["cpu_s"])
        assert run["load_before"] >= 0
    assert result["runs"][0]["poses"] == result["runs"][1]["poses"]


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


@pytest.mark.slow
@pytest.mark.multiprocess
def test_redock_is_timed_too_and_its_times_are_left_out_of_the_comparison(tmp_path):
    pytest.importorskip("vina", reason="needs the dock extra: pip install -e '.[dock]'")
    pytest.importorskip("meeko", reason="needs the dock extra: pip install -e '.[dock]'")
    out = tmp_path / "ranks.json"
    assert bench_ranks.main(["--complexes", "1", "--copies", "2", "--redock", "--out", str(out)]) == 0
    result = json.loads(out.read_text())
    assert [(run["tool"], run["ranks"]) for run in result["runs"]] == [
        ("convert", 1),
        ("convert", 2),
        ("redock", 1),
        ("redock", 2),
    ]
    assert result["differences"] == {"convert 1_vs_2": [], "redock 1_vs_2": []}
    assert all(run["poses"] > 0 for run in result["runs"])


def test_times_named_varying_are_left_out(tmp_path):
    one, two = tmp_path / "one", tmp_path / "two"
    for directory, seconds in ((one, 1.5), (two, 2.5)):
        directory.mkdir()
        (directory / "redock.csv").write_text(f"complex_id,poses,seconds\na,3,{seconds}\n")
        (directory / "a.json").write_text(json.dumps({"poses": 3, "seconds": seconds}))
    assert bench_ranks.differences(one, two) == ["a.json differs", "redock.csv differs"]
    assert bench_ranks.differences(one, two, ("seconds",)) == []
