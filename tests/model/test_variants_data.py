"""What the variants need from the data path: van der Waals radii (shard attribute or derived, in packs and
HDF5 levels alike), the decode cache off for cnn3d, and one-command training of every variant."""

import h5py
import numpy as np
import pytest
import torch

from pecan import config as cfgmod
from pecan.data import layout
from pecan.data.index import DataError
from pecan.data.loader import make_dataset
from pecan.data.packed import PACK_VERSION, read_header
from pecan.engine.distributed import discover
from pecan.train.build import build_data
from pecan.train.threads import size_threads
from tests.train.helpers import tiny_run

LEVELS = ("reopen", "handle_cache", "hoist", "decode_cache", "packed")


def add_vdw(data_dir, scale=1.0):
    """Give every pose and crystal group a van_der_waals attribute (like FAST); returns {group path: radii}."""
    written = {}
    for shard in sorted(data_dir.glob("*.hdf5")):
        with h5py.File(shard, "a") as handle:

            def visit(name, item):
                if isinstance(item, h5py.Group) and layout.DATASET_NAME in item:
                    n = item[layout.DATASET_NAME].shape[0]
                    radii = (1.0 + np.arange(n, dtype=np.float32) / 100) * scale
                    item.attrs[layout.VDW_ATTR] = radii
                    written[name] = radii

            handle.visititems(visit)
    return written


def batches_by_level(tmp_path, config):
    from pecan.data.loader import load_split_indexes, prepare_packs

    train, _ = load_split_indexes(config.data)
    packs = prepare_packs(config.data, [train])
    order = list(range(min(len(train), 6)))
    return {m: make_dataset(config.data, train, packs, io_mode=m).__getitems__(order) for m in LEVELS}


def test_shard_radii_reach_every_level(tmp_path):
    _, config = tiny_run(tmp_path, "data.pocket_radius=1000.0")
    add_vdw(tmp_path / "data")
    batches = batches_by_level(tmp_path, config)
    expected = batches["reopen"].vdw
    assert expected.min() >= 1.0 and expected.max() < 1.5 and not torch.allclose(expected, expected[0])
    for mode in LEVELS:
        assert torch.equal(batches[mode].vdw, expected), mode


def test_missing_radii_are_derived_from_the_element(tmp_path):
    _, config = tiny_run(tmp_path)
    batches = batches_by_level(tmp_path, config)
    derived = torch.from_numpy(layout.element_vdw(batches["reopen"].x.numpy()))
    assert {round(float(v), 2) for v in derived} <= {round(v, 2) for v in (*layout.VDW_RADII, layout.VDW_DEFAULT)}
    for mode in LEVELS:
        assert torch.equal(batches[mode].vdw, derived), mode


def test_wrong_length_radii_name_the_pose(tmp_path):
    _, config = tiny_run(tmp_path)
    shard = sorted((tmp_path / "data").glob("*.hdf5"))[0]
    with h5py.File(shard, "a") as handle:
        pdbid = next(iter(handle))
        poses = handle[f"{pdbid}/{layout.DEFAULT_POSE_GROUP}"]
        poseid = next(iter(poses))
        poses[poseid].attrs[layout.VDW_ATTR] = np.ones(3, dtype=np.float32)
    from pecan.data.loader import load_split_indexes

    train, val = load_split_indexes(config.data)
    frame = train if pdbid in set(train["complex_id"]) else val
    dataset = make_dataset(config.data, frame, io_mode="handle_cache")
    row = int(np.flatnonzero((frame["complex_id"] == pdbid).to_numpy() & (frame["pose_id"] == poseid).to_numpy())[0])
    with pytest.raises(DataError, match=f"{poseid}.*'van_der_waals' has 3 values"):
        dataset[row]


def test_packs_carry_radii_under_a_new_version(tmp_path):
    _, config = tiny_run(tmp_path)
    from pecan.data.loader import load_split_indexes, prepare_packs

    train, _ = load_split_indexes(config.data)
    packs = prepare_packs(config.data, [train])
    header = read_header(next(iter(packs.values())))
    assert PACK_VERSION >= 2 and header["version"] == PACK_VERSION and "vdw" in header["arrays"]


@pytest.mark.parametrize("variant,cache", [("cnn3d", False), ("egnn", True)])
def test_decode_cache_is_off_only_for_the_augmenting_variant(tmp_path, variant, cache):
    settings = ["data.io_mode=decode_cache", f"model.name={variant}"]
    path, _ = tiny_run(tmp_path, settings={"model": {}})
    config = cfgmod.load(path, settings)
    env = discover({})
    data = build_data(config, env, size_threads(config, env).num_workers, torch.device("cpu"), "off")
    assert data.train_set.use_decode_cache is cache
    assert data.val_set.use_decode_cache is True
    data.close()


TINY_SETTINGS = {
    "sgcnn": ["model.covalent_gather_width=16", "model.noncovalent_gather_width=16", "model.noncovalent_cutoff=4.5"],
    "ggcnn": ["model.gated_width=16", "model.gated_steps=2"],
    "cnn3d": ["model.grid_size=8", "model.resolution=2.0", "model.channels=4"],
}


@pytest.mark.slow
@pytest.mark.parametrize("variant", sorted(TINY_SETTINGS))
def test_each_variant_trains_from_one_command(tmp_path, variant):
    import main_app
    from pecan import report

    path, _ = tiny_run(tmp_path, *TINY_SETTINGS[variant], settings={"model": {"name": variant}})
    settings = ["train.epochs=1", *TINY_SETTINGS[variant]]
    assert main_app.main([str(path), *sum((["--set", s] for s in settings), [])]) == 0
    records = report.read_records(tmp_path / "run" / "epochs.jsonl")
    assert len(records) == 1 and np.isfinite(records[0]["train_loss"]) and np.isfinite(records[0]["val_loss"])
