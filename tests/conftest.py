"""Shared fixtures and markers."""

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: takes more than a few seconds (still runs in CI)")
    config.addinivalue_line("markers", "multiprocess: starts several processes (DDP ranks, workers)")
    config.addinivalue_line("markers", "ddp_smoke: a 2-rank test that `make test-fast` runs despite slow/multiprocess")


@pytest.fixture
def tiny_dataset(tmp_path):
    """Two shards x 2 complexes x 3 poses + crystal, with an index CSV."""
    from tests.shards import write_dataset

    shards, csv = write_dataset(tmp_path / "data")
    return tmp_path / "data", shards, csv


@pytest.fixture
def data_dir(tmp_path):
    """2 shards x 3 complexes x (3 poses + crystal) and index.csv with relative shard names (the data set of
    the bad-input cases, tests/app_run.py)."""
    from tests.shards import write_dataset

    directory = tmp_path / "data"
    write_dataset(directory, n_shards=2, n_complexes=3, n_poses=3)
    return directory


@pytest.fixture(autouse=True)
def _private_user_cache(tmp_path, monkeypatch):
    """Derived files that fall back to the per-user cache land in the test's tmp_path, not in ~/.cache."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))
    for name in ("PECAN_CACHE_DIR", "PECAN_INDEX_CSV_DIR", "PECAN_DECODE_CACHE", "PECAN_TORCH_COMPILE"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(autouse=True)
def _one_torch_thread_per_worker(monkeypatch):
    """Under pytest-xdist with several workers (one per core), each test runs as the child processes of
    ``tests/procs.py`` ``clean_env`` already do: OMP_NUM_THREADS=1 and one torch thread.

    Two workers of two threads each on two cores oversubscribe them, and torch's OpenMP threads then spin at
    every barrier waiting for a thread the other worker holds: in-process tests ran up to 1.7x slower
    (BENCHMARKS.md, test suite). An in-process trainer therefore takes its thread count from the environment
    here; sizing from the cores or the config is tested on its own (tests/test_report.py
    ``test_size_threads_applies_each_source``). One process (TEST_WORKERS=0) keeps torch's default."""
    if int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")) > 1:
        import torch

        monkeypatch.setenv("OMP_NUM_THREADS", "1")
        torch.set_num_threads(1)


@pytest.fixture
def mounts():
    """Real read-only bind mounts and tiny tmpfs mounts, always unmounted at the end (skips without root)."""
    from tests.mounts import Mounts

    made = Mounts()
    yield made
    made.unmount_all()


@pytest.fixture
def make_config(tmp_path):
    """The config factory (tests/configs.py) in this test's tmp_path: ``make_config({"train.epochs": 1})``
    writes tmp_path/run.yaml (and the tiny shards) and returns (path, typed config)."""
    from tests import configs

    def make(settings=None, *overrides, **kwargs):
        return configs.make_config(tmp_path, settings, *overrides, **kwargs)

    return make


@pytest.fixture(scope="session")
def trained_run(tmp_path_factory):
    """One epoch of the tiny run, trained once per session; tests that change its run directory work on
    ``trained_run.copy_to(tmp)``, and score with ``trained_run.checkpoint`` (a copy outside the run)."""
    from tests.configs import train_once

    return train_once(tmp_path_factory.mktemp("trained"))
