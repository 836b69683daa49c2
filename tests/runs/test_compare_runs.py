"""scripts/compare_runs.py: replicate statistics and the comparability checks."""

import importlib.util
from pathlib import Path

import pytest
import yaml

from pecan.report import append_record

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("compare_runs", ROOT / "scripts" / "compare_runs.py")
compare_runs = importlib.util.module_from_spec(spec)
spec.loader.exec_module(compare_runs)


def fake_run(
    directory: Path, rates: list[float], epochs: int = None, world: int = 1, samples: int = 100, opens: float = 0.0
) -> Path:
    directory.mkdir(parents=True)
    (directory / "config.yaml").write_text(yaml.safe_dump({"train": {"epochs": epochs or len(rates)}}))
    for k, rate in enumerate(rates):
        append_record(
            directory / "epochs.jsonl",
            {
                "epoch": k + 1,
                "samples_per_s": rate,
                "wall_s": samples / rate,
                "data_wait_share": 0.1,
                "file_opens_per_sample": opens,
                "h5_calls_per_sample": 12 * opens,
                "world_size": world,
                "samples": samples,
                "io_mode": "packed" if opens == 0 else "reopen",
            },
        )
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


def test_bad_directory_is_named(tmp_path, capsys):
    from pecan import cli
    from pecan.runtime.errors import ConfigError

    with pytest.raises(ConfigError, match="nothing has no epochs.jsonl"):
        compare_runs.parse_groups([f"x={tmp_path / 'nothing'}"])
    assert cli.main(["runs", "compare", f"x={tmp_path / 'nothing'}"]) != 0
    assert "nothing has no epochs.jsonl" in capsys.readouterr().err


def with_settings(run: Path, **settings) -> Path:
    """Rewrite a fake run's records with the given settings (as a real run records them)."""
    from pecan.report import read_records

    records = read_records(run / "epochs.jsonl")
    (run / "epochs.jsonl").unlink()
    for record in records:
        append_record(run / "epochs.jsonl", {**record, **settings})
    return run


def test_thread_count_difference_is_flagged_and_strict_refuses(tmp_path, capsys):
    a = with_settings(fake_run(tmp_path / "a", [5.0, 5.0, 5.0]), intra_op_threads=1, num_workers=1)
    b = with_settings(fake_run(tmp_path / "b", [5.0, 6.0, 6.0]), intra_op_threads=2, num_workers=1)
    _, warnings = compare_runs.compare({"a": [a], "b": [b]})
    assert [w for w in warnings if "intra_op_threads" in w and "not comparable" in w]
    assert not [w for w in warnings if "num_workers" in w]
    assert compare_runs.main([f"a={a}", f"b={b}"]) == 0
    assert compare_runs.main(["--strict", f"a={a}", f"b={b}"]) == 2
    assert "differ in intra_op_threads" in capsys.readouterr().out
    same = with_settings(fake_run(tmp_path / "c", [5.0, 5.0, 5.0]), intra_op_threads=1, num_workers=1)
    assert compare_runs.main(["--strict", f"a={a}", f"c={same}"]) == 0


def test_replicates_must_agree_and_one_epoch_is_noted(tmp_path):
    a1 = with_settings(fake_run(tmp_path / "a1", [5.0, 5.0]), num_workers=1)
    a2 = with_settings(fake_run(tmp_path / "a2", [5.0, 5.0]), num_workers=3)
    single = fake_run(tmp_path / "one", [4.0])
    table, warnings = compare_runs.compare({"a": [a1, a2], "one": [single]})
    text = "\n".join(warnings)
    assert "replicates of a differ in num_workers" in text
    assert "only 1 epoch(s)" in text and "include the warm-up" in text
    assert "| one |" in table.split("\n\n")[1]  # the phase table has a row per group


def with_config(run: Path, **sections) -> Path:
    """Give a fake run a resolved config (as config.yaml holds it) and a runs.jsonl start record."""
    (run / "config.yaml").write_text(yaml.safe_dump({"train": {"epochs": 3, "out_dir": str(run)}, **sections}))
    append_record(
        run / "runs.jsonl",
        {"world_size": 1, "git": {"commit": "abc", "dirty": False}, "packages": {"torch": "2.13"}, "host": run.name},
    )
    return run


def test_every_config_difference_is_listed_and_strict_refuses(tmp_path, capsys):
    a = with_config(
        fake_run(tmp_path / "h48", [5.0, 5.0, 5.0]),
        model={"hidden": 48, "layers": 2},
        data={"batch_size": 8, "io_mode": "packed"},
    )
    b = with_config(
        fake_run(tmp_path / "h96", [5.0, 5.0, 5.0]),
        model={"hidden": 96, "layers": 2},
        data={"batch_size": 16, "io_mode": "packed"},
    )
    table, warnings = compare_runs.compare({"a": [a], "b": [b]})
    rows = [row for row in table.splitlines() if row.startswith("| model.") or row.startswith("| data.")]
    assert rows == ["| data.batch_size | 8 | 16 | no |", "| model.hidden | 48 | 96 | no |"]
    assert "train.out_dir" in table and "| train.out_dir |" in table  # listed, but allowed
    assert [w for w in warnings if "outside the allow-list" in w and "model.hidden" in w and "data.batch_size" in w]
    assert compare_runs.main([f"a={a}", f"b={b}"]) == 0
    assert compare_runs.main(["--strict", f"a={a}", f"b={b}"]) == 2
    assert compare_runs.main(["--strict", "--allow", "model.hidden", f"a={a}", f"b={b}"]) == 2
    assert compare_runs.main(["--strict", "--allow", "model.hidden", "--allow", "data.*", f"a={a}", f"b={b}"]) == 0
    capsys.readouterr()


def test_one_replicate_has_no_spread(tmp_path):
    table, _ = compare_runs.compare({"one": [fake_run(tmp_path / "one", [4.0, 5.0, 5.0])]})
    row = table.splitlines()[2]
    assert "5.0 (1 run)" in row and "±" not in row


def test_resume_names_the_changed_keys(tmp_path, caplog):
    from pecan.engine.state import CheckpointState
    from pecan.train import checkpoint

    class Config:
        def __init__(self, values):
            self.values = values

        def digest(self):
            return str(sorted(self.values.items()))

        def to_dict(self):
            return self.values

    saved = {"train": {"lr": 0.001, "epochs": 3}, "data": {"batch_size": 8, "pocket_radius": 8.0}}
    now = Config({"train": {"lr": 0.003, "epochs": 3}, "data": {"batch_size": 16, "pocket_radius": 8.0}})
    state = CheckpointState(model={}, config=saved, config_digest="old")
    with caplog.at_level("WARNING"):
        changes = checkpoint.warn_changed_settings(state, now, tmp_path / "last.pt")
    assert changes == ["data.batch_size: checkpoint 8, config 16", "train.lr: checkpoint 0.001, config 0.003"]
    assert "train.lr: checkpoint 0.001, config 0.003" in caplog.text
