"""Shared fixtures and markers."""

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


@pytest.fixture(autouse=True)
def _private_user_cache(tmp_path, monkeypatch):
    """Derived files that fall back to the per-user cache land in the test's tmp_path, not in ~/.cache."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg-cache"))
    for name in ("PECAN_CACHE_DIR", "PECAN_INDEX_CSV_DIR", "PECAN_DECODE_CACHE", "PECAN_TORCH_COMPILE"):
        monkeypatch.delenv(name, raising=False)


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
