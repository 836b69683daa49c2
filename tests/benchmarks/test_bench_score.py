"""benchmarks/bench_score.py: the poses file it builds, and a small case end to end (its own child process)."""

import json

import pytest

pytest.importorskip("rdkit", reason="needs the convert extra: pip install -e '.[convert]'")
pytest.importorskip("prolif", reason="needs the convert extra: pip install -e '.[convert]'")

from rdkit import Chem

from benchmarks import bench_score


def test_poses_are_the_vina_poses_repeated_with_unique_titles(tmp_path):
    poses, manifest = bench_score.write_poses(tmp_path, 20, "complex")
    mols = list(Chem.SDMolSupplier(str(poses), removeHs=False))
    assert [m.GetProp("_Name") for m in mols] == [f"pose_{k}" for k in range(1, 21)]
    assert mols[0].GetProp("vina_score") == mols[9].GetProp("vina_score")
    assert manifest.read_text().splitlines()[0] == "complex_id,receptor,poses"


def test_limiting_stage_is_the_largest_share():
    assert bench_score.limiting({"parse": 1.0, "model": 3.0}) == {"stage": "model", "share": 0.75}


@pytest.mark.slow
def test_a_small_case_runs_end_to_end(trained_run, tmp_path):
    out = tmp_path / "score.json"
    argv = ["--checkpoint", str(trained_run.checkpoint), "--poses", "3", "--work", str(tmp_path / "w")]
    assert bench_score.main([*argv, "--threads", "1", "--out", str(out)]) == 0
    case = json.loads(out.read_text())["cases"]["pecan_3"]
    assert case["exit"] == 0 and set(case["stages"]) == set(bench_score.STAGES)
    assert case["poses_per_second"] > 0 and case["peak_rss_mib"] > 0
    assert (tmp_path / "w" / "scored_3.sdf").exists()
