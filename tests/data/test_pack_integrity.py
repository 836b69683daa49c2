"""Derived files check their own bytes: packs, staged copies and derived index CSVs changed after they were
written are rebuilt where they can be and refused, named, where they cannot (real files, real read-only mounts)."""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import numpy as np
import pytest

import main_app
from pecan import report
from pecan.config import DataConfig
from pecan.data import index as idx
from pecan.data import integrity, packed, packing, staging
from pecan.data.identity import stat_record
from pecan.data.loader import pack_params
from pecan.runtime.errors import DataError
from tests import configs
from tests.configs import SMALL_MODEL
from tests.shards import write_dataset

PARAMS = pack_params(DataConfig())


def move_coordinates(pack: Path) -> None:
    """Every stored coordinate moved by N(0, 1 A), written in place: same size, same header."""
    header = packed.read_header(pack)
    spec = header["arrays"]["pos"]
    start, count = header["data_start"] + spec["offset"], int(np.prod(spec["shape"]))
    with open(pack, "r+b") as handle:
        handle.seek(start)
        pos = np.frombuffer(handle.read(count * 4), dtype="<f4")
        handle.seek(start)
        handle.write((pos + np.random.default_rng(0).normal(0, 1, pos.shape)).astype("<f4").tobytes())


def cut_to_60_percent(pack: Path) -> None:
    """The pack truncated to 60% of its size (its header intact)."""
    os.truncate(pack, int(pack.stat().st_size * 0.6))


def change_a_header_byte(pack: Path) -> None:
    """One character of the JSON header changed in place (a sample's key)."""
    data = bytearray(pack.read_bytes())
    at = data.index(b'"keys"') + 12
    data[at] = ord("x") if data[at] != ord("x") else ord("y")
    with open(pack, "r+b") as handle:
        handle.write(bytes(data[: at + 1]))


DAMAGE = [move_coordinates, cut_to_60_percent, change_a_header_byte]


@pytest.fixture
def shards(tmp_path):
    """Two small shards in tmp_path/data."""
    paths, _ = write_dataset(tmp_path / "data", n_shards=2, n_complexes=4, n_poses=3)
    return tmp_path / "data", paths


def write_config(tmp_path: Path, shard_glob: str, cache_dir: Path) -> Path:
    """A one-epoch tiny run over shard files whose packs live in ``cache_dir``."""
    data = {"train_fns": [shard_glob], "val_fraction": 0.25, "batch_size": 4, "num_workers": 0}
    data["cache_dir"] = str(cache_dir)
    train = {"epochs": 1, "out_dir": str(tmp_path / "run"), "progress": False}
    return configs.write_config(tmp_path, {"data": data, "model": SMALL_MODEL, "train": train}, dataset={})


# ---------------------------------------------------------------------------- packs


def test_a_pack_records_and_passes_its_checksums(tmp_path, shards):
    _, paths = shards
    pack = packing.pack_shard(paths[0], PARAMS, str(tmp_path / "cache"))
    header = packed.read_header(pack)
    assert header["data_start"] + header["payload_bytes"] == pack.stat().st_size
    assert all(isinstance(spec["crc32"], int) for spec in header["arrays"].values())
    assert packed.pack_is_intact(pack)


@pytest.mark.parametrize("damage", DAMAGE)
def test_a_damaged_pack_in_a_writable_cache_is_rebuilt_with_a_warning(tmp_path, shards, damage, caplog):
    _, paths = shards
    pack = packing.pack_shard(paths[0], PARAMS, str(tmp_path / "cache"))
    original = packed.map_pack(pack)["pos"].copy()
    size = pack.stat().st_size
    damage(pack)
    assert not packed.pack_is_intact(pack)
    if damage is not cut_to_60_percent:
        assert pack.stat().st_size == size
    caplog.set_level(logging.INFO)
    assert packing.ensure_packed([paths[0]], PARAMS, str(tmp_path / "cache")) == [pack]
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any(str(pack) in w and "rebuilt" in w for w in warnings), warnings
    assert packed.pack_is_intact(pack)
    assert np.array_equal(packed.map_pack(pack)["pos"], original)


@pytest.mark.parametrize("damage", DAMAGE)
def test_a_damaged_pack_in_a_read_only_cache_is_refused_naming_it(tmp_path, shards, damage, mounts):
    _, paths = shards
    built = packing.pack_shard(paths[0], PARAMS, str(tmp_path / "team"))
    damage(built)
    shared = mounts.read_only(tmp_path / "team", tmp_path / "team-ro")
    with pytest.raises(DataError) as caught:
        packing.ensure_packed([paths[0]], PARAMS, str(shared))
    message = str(caught.value)
    assert str(shared / built.name) in message and "refused" in message and "data.cache_dir" in message
    assert not isinstance(caught.value, integrity.CorruptFile)  # the refusal, not the raw finding


def test_a_damaged_read_only_pack_behind_a_writable_cache_is_passed_over(tmp_path, shards, mounts, caplog):
    data_dir, paths = shards
    beside = packing.pack_shard(paths[0], PARAMS)  # <data>/.pecan_cache, the second place looked in
    move_coordinates(beside)
    mounts.read_only(data_dir, data_dir)
    caplog.set_level(logging.WARNING)
    [found] = packing.ensure_packed([paths[0]], PARAMS, str(tmp_path / "mine"))
    assert found.parent == tmp_path / "mine" and packed.pack_is_intact(found)
    assert str(beside) in caplog.text and "looked in first" in caplog.text
    assert packing.ensure_packed([paths[0]], PARAMS, str(tmp_path / "mine")) == [found]


def test_training_on_a_pack_changed_in_place_rebuilds_it_and_trains(tmp_path, shards, caplog):
    data_dir, _ = shards
    config = write_config(tmp_path, f"{data_dir}/*.hdf5", tmp_path / "cache")
    assert main_app.main([str(config)]) == 0
    packs = sorted((tmp_path / "cache").glob("*.pecanpack"))
    assert len(packs) == 2
    move_coordinates(packs[0])
    (tmp_path / "run" / "checkpoints" / "last.pt").unlink()  # a fresh run, not a resume
    caplog.set_level(logging.INFO)
    assert main_app.main([str(config)]) == 0
    assert f"pack {packs[0]}: array 'pos' fails its checksum" in caplog.text
    assert packed.pack_is_intact(packs[0]) and len(report.read_records(tmp_path / "run" / "epochs.jsonl")) >= 1


def test_training_from_a_cut_read_only_shared_cache_exits_1_naming_the_pack(tmp_path, shards, mounts, caplog):
    data_dir, _ = shards
    config = write_config(tmp_path, f"{data_dir}/*.hdf5", tmp_path / "team")
    from pecan.commands import pack as pack_command

    assert pack_command.main([str(config), "--processes", "1"]) == 0
    packs = sorted((tmp_path / "team").glob("*.pecanpack"))
    cut_to_60_percent(packs[1])
    shared = mounts.read_only(tmp_path / "team", tmp_path / "team-ro")
    assert main_app.main([str(config), "--set", f"data.cache_dir={shared}"]) == 1
    assert str(shared / packs[1].name) in caplog.text and "truncated" in caplog.text and "refused" in caplog.text


def test_a_pack_cut_short_after_it_was_checked_is_named_when_mapped(setup):
    cfg, frame, packs = setup
    dataset = packed.PackedDataset(frame, packs)
    victim = Path(dataset.pack_paths[0])
    cut_to_60_percent(victim)
    with pytest.raises(integrity.CorruptFile, match=str(victim)):
        dataset.__getitems__([0, 1])


# ---------------------------------------------------------------------------- staged copies


def test_a_staged_pack_changed_in_place_is_copied_again(tmp_path, shards):
    _, paths = shards
    pack = packing.pack_shard(paths[0], PARAMS, str(tmp_path / "cache"))
    first = staging.stage([pack], tmp_path / "stage", check=packed.pack_is_intact)
    staged = Path(first.mapping[str(pack)])
    assert first.files_copied == 1
    move_coordinates(staged)
    again = staging.stage([pack], tmp_path / "stage", check=packed.pack_is_intact)
    assert again.files_copied == 1 and again.files_reused == 0 and packed.pack_is_intact(staged)
    assert staging.stage([pack], tmp_path / "stage", check=packed.pack_is_intact).files_reused == 1


def test_a_staged_copy_whose_marker_still_matches_is_caught_by_its_check(tmp_path, shards):
    _, paths = shards
    pack = packing.pack_shard(paths[0], PARAMS, str(tmp_path / "cache"))
    staged = Path(staging.stage([pack], tmp_path / "stage").mapping[str(pack)])
    move_coordinates(staged)
    # Bit rot changes no stat field: a marker that still matches the copy's stat record.
    staging._marker(staged).write_text(staging._marker_text(pack, stat_record(pack), staged))
    again = staging.stage([pack], tmp_path / "stage", check=packed.pack_is_intact)
    assert again.files_copied == 1 and packed.pack_is_intact(staged)


def test_a_staged_shard_changed_in_place_is_copied_again(tmp_path, shards):
    _, paths = shards
    staged = Path(staging.stage(paths, tmp_path / "stage").mapping[str(paths[0])])
    with open(staged, "r+b") as handle:
        handle.seek(staged.stat().st_size // 2)
        handle.write(b"\xff")
    again = staging.stage(paths, tmp_path / "stage")
    assert again.files_copied == 1 and again.files_reused == 1 and staged.read_bytes() == paths[0].read_bytes()


# ---------------------------------------------------------------------------- derived index CSVs


def derive(data_dir: Path, index_dir: str = ""):
    """The index of every shard under ``data_dir``, derived (and saved) or reused."""
    settings = dict(pose_group="pybel/processed/docking", crystal_group="pybel/processed/pdbbind")
    settings.update(use_crystal=True, rmsd_threshold=2.0)
    return idx.build_index([], [f"{data_dir}/*.hdf5"], "", index_prefix="pecan", index_dir=index_dir, **settings)


def flip_a_label(csv: Path) -> None:
    """The first label '1' of the CSV made '0' in place (same size)."""
    text = csv.read_bytes()
    header, _, body = text.partition(b"\n")
    column = header.split(b",").index(b"label")
    lines = body.split(b"\n")
    row = next(k for k, line in enumerate(lines) if line.split(b",")[column : column + 1] == [b"1"])
    cells = lines[row].split(b",")
    cells[column] = b"0"
    lines[row] = b",".join(cells)
    with open(csv, "r+b") as handle:
        handle.write(header + b"\n" + b"\n".join(lines))


def test_a_derived_index_changed_in_place_is_derived_again(shards, caplog):
    data_dir, _ = shards
    first = derive(data_dir)
    csv = data_dir / "pecan_all.csv"
    flip_a_label(csv)
    caplog.set_level(logging.INFO)
    again = derive(data_dir)
    assert f"derived index {csv} does not hold the bytes" in caplog.text and "reusing" not in caplog.text
    assert again["label"].tolist() == first["label"].tolist()
    caplog.clear()
    derive(data_dir)
    assert "reusing the derived index" in caplog.text


def test_a_derived_index_changed_in_a_read_only_place_is_refused_naming_it(shards, mounts):
    data_dir, _ = shards
    derive(data_dir)
    csv = data_dir / "pecan_all.csv"
    flip_a_label(csv)
    mounts.read_only(data_dir, data_dir)
    with pytest.raises(DataError, match=f"derived index {csv} .*refused: set data.index_dir"):
        derive(data_dir)


def test_a_derived_index_from_before_checksums_is_derived_again(shards, caplog):
    data_dir, _ = shards
    derive(data_dir)
    sidecar = data_dir / "pecan_all.csv.json"
    saved = json.loads(sidecar.read_text())
    del saved["csv_blake2b"]
    sidecar.write_text(json.dumps(saved))
    caplog.set_level(logging.INFO)
    derive(data_dir)
    assert "has no checksum (an older PECAN wrote it); deriving it again" in caplog.text
    assert "csv_blake2b" in json.loads(sidecar.read_text())


def flip_last_byte(pack: Path, name: str) -> None:
    """The last byte of array ``name`` inverted in place (same size, same header)."""
    header = packed.read_header(pack)
    spec = header["arrays"][name]
    nbytes = int(np.prod(spec["shape"], dtype=np.int64)) * np.dtype(spec["dtype"]).itemsize
    at = header["data_start"] + spec["offset"] + nbytes - 1
    with open(pack, "r+b") as handle:
        handle.seek(at)
        byte = handle.read(1)
        handle.seek(at)
        handle.write(bytes([byte[0] ^ 0xFF]))


def test_every_array_changed_in_place_is_caught_and_named(tmp_path, shards):
    """Each array of a pack, the last one and its last byte included, fails its own checksum by name."""
    _, paths = shards
    pack = packing.pack_shard(paths[0], PARAMS, str(tmp_path / "cache"))
    header = packed.read_header(pack)
    names = [name for name, spec in header["arrays"].items() if int(np.prod(spec["shape"], dtype=np.int64)) > 0]
    last = max(names, key=lambda name: header["arrays"][name]["offset"])
    assert header["data_start"] + header["payload_bytes"] == pack.stat().st_size
    pristine = pack.read_bytes()
    for name in names:
        pack.write_bytes(pristine)
        flip_last_byte(pack, name)
        assert pack.stat().st_size == len(pristine)
        assert not packed.pack_is_intact(pack), name
        with pytest.raises(integrity.CorruptFile, match=f"array '{name}' fails its checksum"):
            integrity.verify(pack, packed.read_header(pack))
    spec = header["arrays"][last]
    end = header["data_start"] + spec["offset"] + int(np.prod(spec["shape"])) * np.dtype(spec["dtype"]).itemsize
    assert end == len(pristine)  # the last array's last byte is the file's last byte: it was covered above
