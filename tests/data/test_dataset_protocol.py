"""Both readers are a PoseDataset: the attributes the trainer reads are declared, not probed."""

import pytest

from pecan.data.loader import make_dataset
from pecan.data.sample import PoseDataset, SampleTable


@pytest.mark.parametrize("mode", ["reopen", "decode_cache", "packed"])
def test_every_reader_declares_the_dataset_protocol(setup, mode):
    cfg, frame, packs = setup
    dataset = make_dataset(cfg, frame, packs, io_mode=mode)
    assert isinstance(dataset, PoseDataset)
    assert isinstance(dataset.table, SampleTable) and len(dataset) == len(dataset.table) == len(frame)
    assert dataset.skipped_at_build == 0  # every sample of the tiny data set is good
    assert dataset.use_decode_cache is (mode == "decode_cache")  # a pack holds decoded arrays already


def test_a_class_without_the_attributes_is_not_one():
    class Bare:
        def __len__(self) -> int:
            return 0

        def __getitem__(self, i: int):
            raise IndexError(i)

    assert not isinstance(Bare(), PoseDataset)
