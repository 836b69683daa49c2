"""The bad-input catalogue, part 3: optional extras that are missing, shard paths spelled two ways, index
CSV headers, resume after a fallback, JSON that is JSON, clean stops, damaged locks, empty records,
unreadable shard attributes and ranks that disagree. Each case asserts the exit code and that the message
names the file, column, pose or rank."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.procs import app_argv, clean_env
from tests.test_bad_inputs import ROOT, data_dir, edit_csv, records, run  # noqa: F401 (data_dir: fixture)

# ---------------------------------------------------------------------------- optional extras


def without_modules(tmp_path: Path, *names: str) -> dict[str, str]:
    """A clean environment whose interpreter cannot import ``names`` (a sitecustomize on PYTHONPATH
    sets them to None in sys.modules, so ``import name`` raises ImportError) — a venv without the extra."""
    site = tmp_path / "no-extras"
    site.mkdir()
    lines = ["import sys"] + [f"sys.modules[{name!r}] = None" for name in names]
    (site / "sitecustomize.py").write_text("\n".join(lines) + "\n")
    env = clean_env()
    env["PYTHONPATH"] = f"{site}:{env['PYTHONPATH']}"
    return env


@pytest.mark.slow
@pytest.mark.parametrize(
    "blocked, warnings",
    [
        (("matplotlib", "tensorboard", "dftracer"), ["matplotlib is missing", "tensorboard is missing"]),
        (("dftracer.python",), []),  # the package is there but its native part does not load
    ],
)
def test_missing_optional_extras_cost_a_warning_never_the_exit_code(tmp_path, make_config, blocked, warnings):
    path, config = make_config(
        {"train.epochs": 1, "train.plots": True, "train.tensorboard": True, "trace.enabled": True},
        "train.max_steps_per_epoch=2",
    )
    env = without_modules(tmp_path, *blocked)
    done = subprocess.run(app_argv(path), cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    text = done.stdout + done.stderr
    assert done.returncode == 0, text[-3000:]
    assert "Traceback" not in text
    for warning in [*warnings, "native dftracer library is missing"]:
        assert text.count(warning) == 1, (warning, text[-3000:])
    assert len(report_lines(config.train.out_dir)) == 1


def report_lines(out_dir) -> list[dict]:
    lines = (Path(out_dir) / "epochs.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines if line.strip()]
