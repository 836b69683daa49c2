"""A disk that fills during a run (out_dir on a 64 KiB tmpfs): exit 1 naming the path and ENOSPC, and
nothing of the run left open once main has returned."""

import subprocess

import pytest

from tests.app_run import run


def test_disk_full_names_path(tmp_path, data_dir, caplog, capsys):
    mount = tmp_path / "small"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mount)], capture_output=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.decode().strip()}")
    try:
        code, text = run(
            tmp_path,
            data_dir,
            f"train.out_dir={mount / 'run'}",
            "model.hidden=64",
            "model.layers=3",
            "train.max_steps_per_epoch=1",
            caplog=caplog,
            capsys=capsys,
        )
    finally:
        unmounted = subprocess.run(["umount", str(mount)], check=False, capture_output=True, text=True)
    assert code == 1
    assert "disk full" in text and str(mount / "run") in text and "ENOSPC" in text
    # Nothing of the run (its per-rank log file included) stays open once main has returned.
    assert unmounted.returncode == 0, unmounted.stderr
