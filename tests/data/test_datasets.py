"""Every I/O level returns the same samples; caches, counters, forks, invalidation and bad input."""

import os
import time
from pathlib import Path

import h5py
import numpy as np
import pytest
import torch

from pecan.config import DataConfig
from pecan.data import layout, packed, packing
from pecan.data.index import DataError
from pecan.data.loader import load_split_indexes, make_dataset, pack_params, prepare_packs
from pecan.data.sample import COUNTER_FIELDS, counters_to_dict, passthrough_collate
from tests.shards import write_shard

LEVELS = ["reopen", "handle_cache", "hoist", "decode_cache", "packed"]
FIELDS = [
    "x",
    "pos",
    "edge_index",
    "edge_type",
    "is_ligand",
    "y",
    "pose_features",
    "complex_code",
    "sample_id",
    "batch",
]


def counts(batch):
    return counters_to_dict(batch.io_counts)


def test_levels_are_bit_identical(setup):
    cfg, frame, packs = setup
    order = [5, 0, 9, 3, 15, 7]
    batches = {m: make_dataset(cfg, frame, packs, io_mode=m).__getitems__(order) for m in LEVELS}
    for mode in LEVELS[1:]:
        for name in FIELDS:
            a, b = getattr(batches["reopen"], name), getattr(batches[mode], name)
            assert a.dtype == b.dtype and torch.equal(a, b), (mode, name)
        assert batches[mode].num_graphs == len(order)
    # The batch keeps every sample's target-sorted edges sorted (the model's fast path).
    for mode, batch in batches.items():
        assert bool((batch.edge_index[1].diff() >= 0).all()), mode


def test_counters_per_level(setup):
    cfg, frame, packs = setup
    n = len(frame)
    for mode in LEVELS:
        dataset = make_dataset(cfg, frame, packs, io_mode=mode)
        first = counts(dataset.__getitems__(list(range(n))))
        second = counts(dataset.__getitems__(list(range(n))))
        assert first["samples"] == second["samples"] == n
        h5_calls = sum(second[k] for k in ("h5_file_opens", "h5_object_opens", "attr_reads", "dataset_reads"))
        if mode == "reopen":
            assert second["file_opens"] >= n and second["attr_reads"] > 0
        elif mode == "handle_cache":
            assert second["file_opens"] == 0 and second["attr_reads"] > 0
        elif mode == "hoist":
            assert second["attr_reads"] == 0 and second["dataset_reads"] == n
        elif mode == "decode_cache":
            assert second["dataset_reads"] == 0 and h5_calls == 0
        else:
            assert first["file_opens"] == len(packs) and first["h5_file_opens"] == 0
            assert second["file_opens"] == 0 and h5_calls == 0 and second["bytes_read"] > 0


def test_augmentation_forces_decode_cache_off(setup):
    cfg, frame, packs = setup
    assert make_dataset(cfg, frame, packs, io_mode="decode_cache").use_decode_cache
    assert not make_dataset(cfg, frame, packs, io_mode="decode_cache", augment=True).use_decode_cache
    cfg.decode_cache = False
    assert not make_dataset(cfg, frame, packs, io_mode="decode_cache").use_decode_cache


@pytest.mark.parametrize("mode", ["decode_cache", "packed"])
def test_augmentation_rotates_rigidly(setup, mode):
    cfg, frame, packs = setup
    plain = make_dataset(cfg, frame, packs, io_mode=mode).__getitems__([0, 1])
    rotated = make_dataset(cfg, frame, packs, io_mode=mode, augment=True).__getitems__([0, 1])
    assert not torch.allclose(plain.pos, rotated.pos)
    for g in range(2):
        mask = plain.batch == g
        d0 = torch.cdist(plain.pos[mask], plain.pos[mask])
        d1 = torch.cdist(rotated.pos[mask], rotated.pos[mask])
        assert torch.allclose(d0, d1, atol=1e-4)


def test_handles_never_cross_pickle(setup):
    import pickle

    cfg, frame, packs = setup
    for mode in ("handle_cache", "packed"):
        dataset = make_dataset(cfg, frame, packs, io_mode=mode)
        dataset.__getitems__([0, 1])
        clone = pickle.loads(pickle.dumps(dataset))
        state = clone.__dict__
        assert not state.get("_handles") and state.get("_packs") is None
        assert int(clone.counters.take().sum()) == 0


@pytest.mark.multiprocess
@pytest.mark.parametrize("context", ["fork", "spawn"])
@pytest.mark.parametrize("mode", ["handle_cache", "packed"])
def test_workers_open_their_own_handles(setup, context, mode):
    cfg, frame, packs = setup
    dataset = make_dataset(cfg, frame, packs, io_mode=mode)
    dataset.__getitems__([0])  # the parent holds an open handle / map before workers start
    loader = torch.utils.data.DataLoader(
        dataset,
        batch_size=4,
        num_workers=2,
        multiprocessing_context=context,
        collate_fn=passthrough_collate,
        persistent_workers=True,
    )
    totals = []
    for _ in range(2):
        total = torch.zeros(len(COUNTER_FIELDS), dtype=torch.int64)
        seen = 0
        for batch in loader:
            total += batch.io_counts
            seen += batch.num_graphs
        assert seen == len(frame)
        totals.append(counters_to_dict(total))
    first, second = totals
    # Each worker opened what it used itself (the parent's handle was not inherited) ...
    assert 1 <= first["file_opens"] <= 2 * len(packs)
    # ... and kept it across epochs (persistent workers).
    assert second["file_opens"] == 0


def test_pack_invalidated_when_shard_changes(setup, tmp_path):
    cfg, frame, packs = setup
    shard = Path(frame["shard"][0])
    params = pack_params(cfg)
    assert packed.find_valid_pack(shard, params, cfg.cache_dir) == packs[str(shard)]
    with h5py.File(shard, "a") as handle:
        pose = handle[f"c000/{layout.DEFAULT_POSE_GROUP}/c000_pose0/data"]
        pose[0, 0] += 1.0
    os.utime(shard, ns=(time.time_ns(), time.time_ns() + 10**9))
    assert packed.find_valid_pack(shard, params, cfg.cache_dir) is None
    rebuilt = prepare_packs(cfg, [frame])
    dataset = make_dataset(cfg, frame, rebuilt)
    reference = make_dataset(cfg, frame, io_mode="hoist")
    row = int(np.flatnonzero((frame["complex_id"] == "c000") & (frame["pose_id"] == "c000_pose0"))[0])
    assert torch.equal(dataset.__getitems__([row]).pos, reference.__getitems__([row]).pos)


def test_pack_params_change_the_pack(setup):
    cfg, frame, packs = setup
    cfg.edge_cutoff = 3.0
    other = prepare_packs(cfg, [frame])
    assert set(other.values()).isdisjoint(packs.values())


def test_corrupt_shard_fails_pack_and_leaves_nothing(tmp_path):
    shard = tmp_path / "broken.hdf5"
    shard.write_bytes(b"\x89HDF\r\n\x1a\n" + os.urandom(4096))
    params = packed.PackParams(layout.DEFAULT_POSE_GROUP, layout.DEFAULT_CRYSTAL_GROUP, 6.0, 4.5, 2.0)
    with pytest.raises(DataError, match="broken.hdf5"):
        packing.ensure_packed([shard], params, str(tmp_path / "cache"))
    assert not (tmp_path / "cache").exists() or not any((tmp_path / "cache").iterdir())


def test_bad_samples_error_or_skip(tmp_path):
    path = tmp_path / "s.hdf5"
    write_shard(path, n_complexes=1, n_poses=4, crystal=False)
    with h5py.File(path, "a") as handle:
        poses = handle[f"c000/{layout.DEFAULT_POSE_GROUP}"]
        data = poses["c000_pose1/data"][()]
        data[2, 0] = np.nan
        del poses["c000_pose1/data"]
        poses["c000_pose1"].create_dataset("data", data=data)
        del poses["c000_pose2/data"]
        poses["c000_pose2"].create_dataset("data", data=data[:, :20])
    for mode in ("hoist", "packed"):
        cfg = DataConfig(train_fns=[str(path)], val_fraction=0.0, cache_dir=str(tmp_path / "cache"), io_mode=mode)
        frame, _ = load_split_indexes(cfg)
        with pytest.raises(DataError, match="c000_pose1|c000_pose2"):
            dataset = make_dataset(cfg, frame)
            dataset.__getitems__(list(range(len(frame))))
        cfg.on_bad_sample = "skip"
        dataset = make_dataset(cfg, frame)
        batch = dataset.__getitems__(list(range(len(dataset))))
        assert batch.num_graphs == 2
        if mode == "hoist":
            from pecan.data.loader import WireBatch

            bad_rows = frame.index[frame["pose_id"].isin(["c000_pose1", "c000_pose2"])].tolist()
            empty = dataset.__getitems__(bad_rows)
            assert empty.num_graphs == 0 and counters_to_dict(empty.io_counts)["skipped"] == 2
            assert WireBatch(empty).unpack().num_graphs == 0


def test_index_row_naming_missing_pose(setup, tmp_path):
    cfg, frame, packs = setup
    broken = frame.copy()
    broken.loc[3, "pose_id"] = "no_such_pose"
    with pytest.raises(DataError, match="no_such_pose"):
        make_dataset(cfg, broken, packs, io_mode="hoist").__getitems__([3])
    with pytest.raises(DataError, match="no_such_pose"):
        make_dataset(cfg, broken, packs, io_mode="packed")
    cfg.on_bad_sample = "skip"
    assert len(make_dataset(cfg, broken, packs, io_mode="packed")) == len(frame) - 1


def test_missing_data_dataset_named(tmp_path):
    path = tmp_path / "s.hdf5"
    write_shard(path, n_complexes=1, n_poses=2, crystal=False)
    with h5py.File(path, "a") as handle:
        del handle[f"c000/{layout.DEFAULT_POSE_GROUP}/c000_pose0/data"]
    cfg = DataConfig(train_fns=[str(path)], val_fraction=0.0, cache_dir=str(tmp_path / "cache"))
    frame, _ = load_split_indexes(cfg)
    with pytest.raises(DataError, match="c000_pose0"):
        make_dataset(cfg, frame)


@pytest.mark.slow
def test_pack_shards_script(tiny_dataset, tmp_path):
    import subprocess
    import sys

    data_dir, shards, _ = tiny_dataset
    root = Path(__file__).resolve().parents[2]
    config = tmp_path / "c.yaml"
    config.write_text(f"data: {{data_dir: {data_dir}, train_csvs: [index.csv], cache_dir: {tmp_path / 'packs'}}}\n")
    done = subprocess.run(
        [sys.executable, "scripts/pack_shards.py", str(config), "--processes", "2"],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert len(list((tmp_path / "packs").glob("*.pecanpack"))) == len(shards)
    assert "2 pack(s) ready" in done.stdout


@pytest.mark.multiprocess
def test_wire_batch_round_trip_through_workers(setup):
    from pecan.data.loader import WireBatch, make_loader

    cfg, frame, packs = setup
    for mode in ("hoist", "packed"):
        dataset = make_dataset(cfg, frame, packs, io_mode=mode)
        order = list(range(len(frame)))
        direct = dataset.__getitems__(order[:4])
        again = WireBatch(direct).unpack()
        for name in FIELDS + ["ptr", "io_counts"]:
            assert torch.equal(direct[name], again[name]), name
        assert again.num_graphs == 4
        loader = make_loader(make_dataset(cfg, frame, packs, io_mode=mode), order, 4, num_workers=1)
        via_worker, _ = next(iter(loader))
        for name in FIELDS:
            assert torch.equal(direct[name], via_worker[name]), (mode, name)
        loader.close()
