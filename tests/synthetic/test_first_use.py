"""The demo config generates its data on first use and reuses it. First-use synthetic generation killed
midway (SIGKILL while writing shards, or while moving them into place) leaves nothing half-made that a run
trains on: the next start removes it and generates again."""

from __future__ import annotations

import json
import logging
import os
import signal
import subprocess
import sys
import time

import pandas as pd
import pytest

import main_app
from tests.app_run import ROOT
from tests.procs import clean_env

GENERATE = (
    "import sys; from pecan.synthetic.cache import ensure_dataset; ensure_dataset(sys.argv[1], n_shards=8, "
    "complexes_per_shard=3, seed=0, rmsd_threshold=2.0, index_name='index.csv', progress=False)"
)


@pytest.mark.slow
def test_generation_killed_midway_is_redone_never_trained_on(tmp_path, caplog):
    from pecan import config as cfgmod
    from pecan.synthetic.cache import ensure_from_config

    out = tmp_path / "demo"
    child = subprocess.Popen([sys.executable, "-c", GENERATE, str(out)], cwd=ROOT, env=clean_env())
    deadline = time.monotonic() + 300
    while not list(out.glob(".synthetic-tmp-*/shard_001.hdf5")) and child.poll() is None:
        assert time.monotonic() < deadline
        time.sleep(0.02)
    os.kill(child.pid, signal.SIGKILL)
    assert child.wait() == -signal.SIGKILL
    assert not list(out.glob("*.hdf5")) and not (out / "index.csv").exists()  # nothing half-made in place
    caplog.set_level(logging.INFO)
    cfg = cfgmod.from_dict(
        {
            "data": {"data_dir": str(out), "train_csvs": ["index.csv"]},
            "synthetic": {"enabled": True, "shards": 8, "complexes_per_shard": 3},
            "train": {"progress": False},
        }
    )
    ensure_from_config(cfg)
    assert "removing" in caplog.text and "interrupted generation" in caplog.text
    assert sorted(p.name for p in out.glob("*.hdf5")) == [f"shard_{i:03d}.hdf5" for i in range(8)]
    assert pd.read_csv(out / "index.csv")["pdbid"].nunique() == 24
    assert json.loads((out / ".synthetic.json").read_text())["shards"][-1] == "shard_007.hdf5"
    assert not list(out.glob(".synthetic-tmp-*")) and not (out / ".synthetic.pending.json").exists()


def test_generation_killed_while_moving_files_into_place_is_redone(tmp_path, caplog, monkeypatch):
    from pecan import config as cfgmod
    from pecan.synthetic import cache

    cfg = cfgmod.from_dict(
        {
            "data": {"data_dir": str(tmp_path / "d"), "train_csvs": ["index.csv"]},
            "synthetic": {"enabled": True, "shards": 2, "complexes_per_shard": 2},
            "train": {"progress": False},
        }
    )
    real_replace, moved = os.replace, []

    def die_after_first(src, dst):
        into_place = cache.TEMP_PREFIX in str(src) and cache.TEMP_PREFIX not in str(dst)
        if into_place and moved:
            raise KeyboardInterrupt("killed while moving files into place")
        if into_place:
            moved.append(dst)
        real_replace(src, dst)

    monkeypatch.setattr(cache.os, "replace", die_after_first)
    with pytest.raises(KeyboardInterrupt):
        cache.ensure_from_config(cfg)
    monkeypatch.setattr(cache.os, "replace", real_replace)
    assert (tmp_path / "d" / "shard_000.hdf5").exists() and (tmp_path / "d" / cache.PENDING_NAME).exists()
    caplog.set_level(logging.INFO)
    cache.ensure_from_config(cfg)  # not taken for foreign data: the pending marker says whose it is
    assert "interrupted generation" in caplog.text and (tmp_path / "d" / "index.csv").exists()
    assert not (tmp_path / "d" / cache.PENDING_NAME).exists() and (tmp_path / "d" / ".synthetic.json").exists()


@pytest.mark.slow
def test_demo_config_generates_its_data_on_first_use(tmp_path, caplog, capsys):
    caplog.set_level(logging.INFO)
    argv = [
        "configs/demo.yaml",
        "--set",
        f"data.data_dir={tmp_path / 'demo'}",
        "--set",
        f"train.out_dir={tmp_path / 'run'}",
        "--set",
        "synthetic.shards=1",
        "--set",
        "synthetic.complexes_per_shard=3",
        "--set",
        "train.epochs=1",
        "--set",
        "train.max_steps_per_epoch=1",
        "--set",
        "train.progress=false",
        "--set",
        f"data.cache_dir={tmp_path / 'cache'}",
    ]
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        assert main_app.main(argv) == 0
        assert (tmp_path / "demo" / "index.csv").exists() and (tmp_path / "demo" / ".synthetic.json").exists()
        stamp = (tmp_path / "demo" / "shard_000.hdf5").stat().st_mtime_ns
        argv[argv.index("train.epochs=1")] = "train.epochs=2"
        assert main_app.main(argv) == 0  # second start reuses the data
    finally:
        os.chdir(cwd)
    assert (tmp_path / "demo" / "shard_000.hdf5").stat().st_mtime_ns == stamp
    assert "generating the synthetic data set" in caplog.text
