"""The `pecan` command: subcommand list, dispatch, unknown names, `python -m pecan`."""

import subprocess
import sys
from pathlib import Path

import pytest

from pecan import cli

ROOT = Path(__file__).resolve().parents[1]


def test_help_lists_every_subcommand(capsys):
    assert cli.main([]) == 0
    out = capsys.readouterr().out
    for name in cli.COMMANDS:
        assert f"  {name} " in out


def test_unknown_subcommand_is_exit_2_and_lists_the_valid_ones(capsys):
    assert cli.main(["trian"]) == 2
    err = capsys.readouterr().err
    assert "'trian'" in err and "train" in err


def test_every_subcommand_module_has_a_main_with_help():
    import importlib

    for name, (module, _) in cli.COMMANDS.items():
        entry = importlib.import_module(module).main
        try:
            entry(["--help"], prog=f"pecan {name}")
        except SystemExit as stop:  # argparse exits 0 after printing help
            assert stop.code == 0, name


def test_python_dash_m_pecan_runs_the_command():
    done = subprocess.run(
        [sys.executable, "-m", "pecan", "--help"], check=False, cwd=ROOT, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0 and "train" in done.stdout


def test_config_prints_the_resolved_config_with_overrides(capsys):
    import yaml

    assert cli.main(["config", str(ROOT / "configs" / "demo.yaml"), "--set", "data.batch_size=3"]) == 0
    printed = yaml.safe_load(capsys.readouterr().out)
    assert printed["data"]["batch_size"] == 3 and printed["data"]["data_dir"] == "data/demo"
    assert set(printed) >= {"data", "model", "train"}


def test_config_with_an_unknown_key_exits_2_naming_it(capsys):
    assert cli.main(["config", str(ROOT / "configs" / "demo.yaml"), "--set", "data.batchsize=3"]) == 2
    assert "data.batchsize" in capsys.readouterr().err


def test_config_keys_lists_every_key_with_type_default_and_doc(capsys):
    from pecan.config.docs import reference_rows

    assert cli.main(["config", "--keys"]) == 0
    out = capsys.readouterr().out
    assert "data.batch_size: int = 8\n    Graphs per batch per rank." in out
    assert "model.grid_size (cnn3d only): int = " in out
    heads = [line for line in out.splitlines() if line and not line.startswith(" ")]
    assert len(heads) == len(reference_rows()) > 50


def test_config_needs_a_file_or_keys(capsys):
    with pytest.raises(SystemExit) as stop:
        cli.main(["config"])
    assert stop.value.code == 2


def test_synth_writes_a_data_set_the_pack_command_packs(tmp_path, capsys):
    data = tmp_path / "data"
    assert (
        cli.main(
            [
                "synth",
                "--out",
                str(data),
                "--shards",
                "2",
                "--complexes-per-shard",
                "1",
                "--poses-per-complex",
                "2:2",
                "--pocket-atoms",
                "300",
                "--ligand-atoms",
                "15:16",
                "--no-progress",
            ]
        )
        == 0
    )
    assert "2 shards, 6 samples" in capsys.readouterr().out
    config = tmp_path / "run.yaml"
    config.write_text(f"data: {{data_dir: {data}, train_csvs: [index.csv], cache_dir: {tmp_path / 'packs'}}}\n")
    assert cli.main(["pack", str(config), "--processes", "1"]) == 0
    assert "2 pack(s) ready" in capsys.readouterr().out
    assert len(list((tmp_path / "packs").glob("*.pecanpack"))) == 2


def test_pack_with_a_bad_key_exits_with_the_config_error_code(tmp_path, capsys):
    config = tmp_path / "run.yaml"
    config.write_text("data: {batchsize: 3}\n")
    assert cli.main(["pack", str(config)]) == 2
    assert "batchsize" in capsys.readouterr().err


def test_convert_rejects_bad_options_with_exit_2(tmp_path, capsys):
    pytest.importorskip("rdkit")
    assert cli.main(["convert", str(tmp_path / "m.csv"), "--out", str(tmp_path), "--workers", "0"]) == 2
    assert "--workers" in capsys.readouterr().err


@pytest.mark.parametrize("command, quick", [("score", True), ("config", False)])
def test_run_skips_the_teardown_only_after_score(monkeypatch, command, quick):
    """`pecan score`'s process ends with os._exit (its outputs are committed; the teardown costs ~1 s), after
    the logs and streams are flushed; every other command exits normally."""
    ended = []

    def quick_exit(code):
        ended.append(code)
        raise SystemExit(code)

    monkeypatch.setattr(cli, "main", lambda: 3)
    monkeypatch.setattr(cli.os, "_exit", quick_exit)
    monkeypatch.setattr(cli.logging, "shutdown", lambda: ended.append("logs flushed"))
    monkeypatch.setattr(sys, "argv", ["pecan", command])
    with pytest.raises(SystemExit) as done:
        cli.run()
    assert done.value.code == 3 and ended == (["logs flushed", 3] if quick else [])
