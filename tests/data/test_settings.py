"""The datasets and the index walk are built from their settings object, not from copied keywords."""

import inspect

import pytest

from pecan.config import DataConfig
from pecan.data import index as idx
from pecan.data import layout
from pecan.data.h5dataset import H5PoseDataset
from pecan.data.index_derived import derive_index
from pecan.data.loader import make_dataset
from pecan.data.packed import PackedDataset
from pecan.data.settings import IndexSettings, ReaderSettings


def test_reader_settings_come_from_the_data_section():
    data = DataConfig(pocket_radius=7.0, edge_cutoff=3.5, max_atoms=100, max_edges=2000, on_bad_sample="skip")
    settings = ReaderSettings.from_data(data, augment=True)
    assert (settings.pocket_radius, settings.edge_cutoff, settings.max_atoms, settings.max_edges) == (
        7.0,
        3.5,
        100,
        2000,
    )
    assert (settings.pose_group, settings.crystal_group, settings.io_mode) == (
        data.pose_group,
        data.crystal_group,
        data.io_mode,
    )
    assert (settings.on_bad_sample, settings.augment, settings.in_memory) == ("skip", True, False)
    with pytest.raises(AttributeError, match="pose_group"):  # a renamed key is never a silent default
        ReaderSettings.from_data(object())


@pytest.mark.parametrize(
    ("builder", "parameters"),
    [(H5PoseDataset.__init__, 3), (PackedDataset.__init__, 4), (derive_index, 3)],
)
def test_builders_take_a_settings_object(builder, parameters):
    assert len(inspect.signature(builder).parameters) == parameters


@pytest.mark.parametrize("mode", ["hoist", "packed"])
def test_make_dataset_hands_its_settings_to_the_reader(setup, mode):
    cfg, frame, packs = setup
    dataset = make_dataset(cfg, frame, packs, io_mode=mode, augment=True)
    assert dataset.settings == ReaderSettings.from_data(cfg, io_mode=mode, augment=True)


def test_derive_index_reads_its_settings(tiny_dataset):
    _, shards, _ = tiny_dataset
    groups = (layout.DEFAULT_POSE_GROUP, layout.DEFAULT_CRYSTAL_GROUP)
    with_crystal = derive_index(shards, IndexSettings(*groups, True, 2.0))
    without = idx.derive_index(shards, IndexSettings(*groups, False, 2.0))
    assert len(with_crystal) - len(without) == int(with_crystal["is_crystal"].sum()) > 0
    assert not without["is_crystal"].any()
