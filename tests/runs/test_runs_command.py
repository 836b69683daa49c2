"""`pecan runs compare|plot|report|trace`: one command over run directories, the scripts as thin shims."""

from pathlib import Path

import pytest
import yaml

from pecan import cli, report
from tests.test_report import record

ROOT = Path(__file__).resolve().parents[2]


def run_dir(path: Path, hidden: int, starved: bool = False) -> Path:
    """A finished 3-epoch run directory (config.yaml and epochs.jsonl as a run writes them)."""
    path.mkdir(parents=True)
    (path / "config.yaml").write_text(yaml.safe_dump({"model": {"hidden": hidden}, "train": {"epochs": 3}}))
    for epoch in (1, 2, 3):
        extra = {"cpu_share_min": 0.3, "cpu_share_min_rank": 1} if starved else {}
        report.append_record(path / "epochs.jsonl", {**record(epoch), **extra})
    return path


def test_runs_is_a_pecan_subcommand(capsys):
    assert "runs" in cli.COMMANDS
    assert cli.main([]) == 0 and "  runs " in capsys.readouterr().out


def test_compare_strict_and_report(tmp_path, capsys):
    a, b = run_dir(tmp_path / "a", 48), run_dir(tmp_path / "b", 96, starved=True)
    assert cli.main(["runs", "compare", f"a={a}", f"b={b}"]) == 0
    assert "| model.hidden | 48 | 96 | no |" in capsys.readouterr().out
    assert cli.main(["runs", "compare", "--strict", f"a={a}", f"b={b}"]) == 2
    assert cli.main(["runs", "compare", "--strict", "--allow", "model.hidden", f"a={a}", f"b={b}"]) == 0
    capsys.readouterr()
    assert cli.main(["runs", "report", str(b)]) == 0
    out = capsys.readouterr().out
    assert "3 epoch(s)" in out and "| 3 |" in out and out.count("warning: rank 1 got 30%") == 3
    assert cli.main(["runs", "report", str(tmp_path / "missing")]) == 2


def test_plot_and_trace_dispatch(tmp_path, capsys):
    pytest.importorskip("matplotlib", reason="plots need the .[plots] extra")
    a, b = run_dir(tmp_path / "a", 48), run_dir(tmp_path / "b", 96)
    assert cli.main(["runs", "plot", str(a), str(b), "--out", str(tmp_path)]) == 0
    assert (tmp_path / "overlay.png").exists()
    capsys.readouterr()
    assert cli.main(["runs", "trace", str(a)]) == 1
    assert "error: no trace files" in capsys.readouterr().err


@pytest.mark.parametrize(
    "script, command",
    [
        ("compare_runs", "pecan runs compare"),
        ("convert_structures", "pecan convert"),
        ("make_synthetic", "pecan synth"),
        ("pack_shards", "pecan pack"),
        ("plot_run", "pecan runs plot"),
        ("trace_report", "pecan runs trace"),
    ],
)
def test_every_script_shim_is_deprecated_naming_its_command(script, command):
    import subprocess
    import sys

    from tests.procs import ROOT, clean_env

    done = subprocess.run(
        [sys.executable, f"scripts/{script}.py", "--help"], cwd=ROOT, env=clean_env(), capture_output=True, text=True
    )
    assert f"warning: scripts/{script}.py is deprecated (removed in the next release): use `{command}`" in done.stderr
    assert done.returncode == 0 and "usage:" in done.stdout
