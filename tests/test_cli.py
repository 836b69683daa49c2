"""The `pecan` command: subcommand list, dispatch, unknown names, `python -m pecan`."""
import subprocess
import sys
from pathlib import Path

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
    done = subprocess.run([sys.executable, "-m", "pecan", "--help"], check=False, cwd=ROOT, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0 and "train" in done.stdout
