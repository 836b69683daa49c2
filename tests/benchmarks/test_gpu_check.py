"""benchmarks/gpu_check.py: the one-command GPU check runs end to end on the CPU and writes one JSON."""

import json

import pytest

from benchmarks import gpu_check


@pytest.mark.slow
@pytest.mark.multiprocess
def test_cpu_path_writes_every_stage(tmp_path):
    out = tmp_path / "check.json"
    code = gpu_check.main(
        ["--device", "cpu", "--quick", "--modes", "fp32", "bf16", "--out", str(out), "--work", str(tmp_path / "w")]
    )
    report = json.loads(out.read_text())
    assert code == 0, report
    assert report["env"]["torch"] and report["device"] == "cpu"
    assert report["compute"]["status"] == "ok"
    modes = {row["mode"] for row in report["compute"]["table"]["results"].values()}
    assert modes == {"fp32", "bf16"}
    for mode in ("fp32", "bf16"):
        run = report["train"]["runs"][mode]
        assert run["status"] == "ok", run["log_tail"]
        assert len(run["epochs"]) == 1 and run["epochs"][0]["samples_per_s"] > 0
        assert 0.0 <= run["steady_data_wait_share"] < 1.0


def test_a_failing_stage_is_recorded_and_the_json_still_written(tmp_path):
    out = tmp_path / "check.json"
    # No CUDA here: the env stage says so, names the reason, exits 1, and the JSON is there.
    code = gpu_check.main(["--device", "cuda", "--stages", "env", "--out", str(out)])
    report = json.loads(out.read_text())
    if report["env"].get("gpu"):
        pytest.skip("a CUDA device is visible: this case is for machines without one")
    assert code == 1 and "no CUDA device" in report["error"]


def test_epoch_figures_skip_stop_markers(tmp_path):
    records = [
        {
            "epoch": 1,
            "wall_s": 2.0,
            "samples_per_s": 5.0,
            "data_wait_share": 0.1,
            "ranks": {"cuda_peak_mb": [10.0, 8.0]},
        },
        {"stopped": "SIGTERM", "epoch": 2},
        {
            "epoch": 2,
            "wall_s": 1.0,
            "samples_per_s": 9.0,
            "data_wait_share": 0.2,
            "ranks": {"cuda_peak_mb": [11.0, 12.0]},
        },
    ]
    (tmp_path / "epochs.jsonl").write_text("\n".join(json.dumps(r) for r in records))
    rows = gpu_check.epoch_figures(tmp_path)
    assert [r["epoch"] for r in rows] == [1, 2]
    assert [r["cuda_peak_mb"] for r in rows] == [10.0, 12.0]
