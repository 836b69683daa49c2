"""Optional extras (plots, TensorBoard, native tracing) that are missing or fail cost one warning
each, never the exit code: a run without them, the README's cluster install into a fresh venv, a plot that
raises."""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path

import pytest

from tests.app_run import ROOT, report_lines
from tests.procs import app_argv, clean_env, without_modules


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


def test_a_plot_that_fails_costs_a_warning_not_the_finished_run(tmp_path, caplog, monkeypatch):
    from pecan import plots, report
    from pecan.train.records import RunFiles

    def broken(*args, **kwargs):
        raise RuntimeError("no usable font")

    monkeypatch.setattr(plots, "write_plots", broken)
    report.append_record(tmp_path / "epochs.jsonl", {"epoch": 1, "wall_s": 1.0, "samples": 4})
    caplog.set_level(logging.WARNING)
    RunFiles(tmp_path).write_summary(plots=True)
    assert "the plots were not written (RuntimeError: no usable font)" in caplog.text


def requirement_names(dist) -> list[str]:
    """What ``dist`` requires on this platform without extras."""
    from packaging.requirements import Requirement

    names = []
    for text in dist.requires or []:
        requirement = Requirement(text)
        if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
            names.append(requirement.name)
    return names


def base_closure() -> list:
    """The installed distributions a base install of this checkout needs (no extras): what its setup.py
    requires (as installed here), and what those require, on this platform. This checkout itself is left out."""
    from importlib import metadata

    try:
        checkout = metadata.distribution("pecan")
    except metadata.PackageNotFoundError:
        pytest.skip("this checkout is not installed (pip install -e .): its requirements are read from the install")
    found, todo = {}, requirement_names(checkout)
    while todo:
        dist = metadata.distribution(todo.pop())
        if dist.metadata["Name"].lower() in found:
            continue
        found[dist.metadata["Name"].lower()] = dist
        todo.extend(requirement_names(dist))
    return list(found.values())


def venv_with_requirements(venv: Path) -> Path:
    """A fresh venv that already holds torch and the base requirements, nothing else: this interpreter's copies
    of ``base_closure()`` are linked into the venv's site-packages (files and dist-info, so pip sees them
    installed). A cluster's environment holds its own torch; the rest is linked rather than downloaded so that
    the test spends its time on the install and the run, not on unpacking wheels. Returns the venv's python."""
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    site = venv / "lib" / version / "site-packages"
    for dist in base_closure():
        tops = {Path(str(f)).parts[0] for f in dist.files or [] if not str(f).startswith("..")}
        tops.discard("__pycache__")
        if any((site / top).exists() for top in tops):  # the venv has its own (pip, setuptools)
            continue
        for top in tops:
            (site / top).symlink_to(Path(str(dist.locate_file(top))))
    return venv / "bin" / "python"


@pytest.mark.slow
def test_the_readme_cluster_install_without_extras_finishes_a_demo_shaped_run(tmp_path, make_config):
    """`pip install -e .` alone (the README's cluster install: no plots, tensorboard or native tracing) into a
    fresh venv, then a run with plots and TensorBoard on (train.plots defaults to true): exit 0, one warning
    per missing extra.

    The venv holds only the base requirements' closure (``venv_with_requirements``): a requirement missing from
    setup.py is missing there too, and the run fails on its import. Installing them from the package index is
    what CI's own install does (.ci/run)."""
    python = venv_with_requirements(tmp_path / "venv")
    install = [str(python), "-m", "pip", "install", "-q", "-c", str(ROOT / "constraints-cpu.txt"), "-e", str(ROOT)]
    done = subprocess.run(install, capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    torch_dirs = list((tmp_path / "venv" / "lib").glob("python*/site-packages/torch"))
    assert [d.is_symlink() for d in torch_dirs] == [True], "pip replaced the environment's torch"
    for extra in ("matplotlib", "tensorboard"):
        probe = subprocess.run([str(python), "-c", f"import {extra}"], capture_output=True, timeout=120)
        assert probe.returncode != 0, f"{extra} came with the base install: the test would prove nothing"
    path, config = make_config({"train.epochs": 1, "train.plots": True, "train.tensorboard": True})
    env = clean_env()
    env.pop("PYTHONPATH")  # the venv's own editable install of this checkout, nothing of the test's interpreter
    run = subprocess.run(
        [str(python), "-u", str(ROOT / "main_app.py"), str(path), "--set", "train.max_steps_per_epoch=2"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    text = run.stdout + run.stderr
    assert run.returncode == 0, text[-3000:]
    assert "Traceback" not in text
    assert text.count("matplotlib is missing") == 1 and text.count("tensorboard is missing") == 1, text[-3000:]
    assert len(report_lines(config.train.out_dir)) == 1
