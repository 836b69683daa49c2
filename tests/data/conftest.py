"""Fixtures shared by the data tests."""

import pytest

from pecan.config import DataConfig
from pecan.data.loader import load_split_indexes, prepare_packs


@pytest.fixture
def setup(tiny_dataset, tmp_path):
    """(data config, index of every sample, packs) of the tiny data set, validation split off."""
    data_dir, shards, csv = tiny_dataset
    cfg = DataConfig(
        data_dir=str(data_dir), train_csvs=["index.csv"], val_fraction=0.0, cache_dir=str(tmp_path / "cache")
    )
    frame, _ = load_split_indexes(cfg)
    return cfg, frame, prepare_packs(cfg, [frame])
