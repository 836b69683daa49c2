"""scripts/compare_runs.py: replicate statistics and the comparability checks."""
import importlib.util
from pathlib import Path

import pytest
import yaml

from pecan.report import append_record

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("compare_runs", ROOT / "scripts" / "compare_runs.py")
compare_runs = importlib.util.module_from_spec(spec)
spec.loader.exec_module(compare_runs)


def fake_run(directory: Path, rates: list[float], epochs: int = None, world: int = 1, samples: int = 100,
             opens: float = 0.0) -> Path:
    directory.mkdir(parents=True)
    (directory / "config.yaml").write_text(yaml.safe_dump({"train": {"epochs": epochs or len(rates)}}))
    for k, rate in enumerate(rates):
        append_record(directory / "epochs.jsonl", {
            "epoch": k + 1, "samples_per_s": rate, "wall_s": samples / rate, "data_wait_share": 0.1,
            "file_opens_per_sample": opens, "h5_calls_per_sample": 12 * opens, "world_size": world,
            "samples": samples, "io_mode": "packed" if opens == 0 else "reopen"})
    return directory


def test_replicates_and_ratio(tmp_path):
    base = [fake_run(tmp_path / f"a{i}", [1.0, 10.0 + i, 10.0 + i], opens=1.0) for i in (0, 2)]
    fast = [fake_run(tmp_path / f"b{i}", [1.0, 30.0, 30.0]) for i in (0, 1)]
    table, warnings = compare_runs.compare({"reopen": base, "packed": fast}, skip=1)
    rows = table.splitlines()
    assert "11.0 ± 1.4" in rows[2] and "1.00x" in rows[2] and "12.00" in rows[2]
    assert "30.0 ± 0.0" in rows[3] and "2.73x" in rows[3] and "0.000" in rows[3]
    assert warnings == []


def test_incomplete_and_different_scale_are_flagged(tmp_path):
    a = fake_run(tmp_path / "a", [5.0, 5.0], epochs=4)
    b = fake_run(tmp_path / "b", [5.0, 5.0], world=2)
    _, warnings = compare_runs.compare({"a": [a], "b": [b]})
    text = "\n".join(warnings)
    assert "stopped after 2 of 4 epochs" in text
    assert "differ in scale" in text and "one replicate" in text


def test_bad_directory_is_named(tmp_path):
    with pytest.raises(SystemExit, match="nothing"):
        compare_runs.parse_groups([f"x={tmp_path / 'nothing'}"])
