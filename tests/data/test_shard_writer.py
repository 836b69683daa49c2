"""The one shard writer (pecan.data.format.write_shard): the layout the readers expect, read back by hand."""

import math
from pathlib import Path

import h5py
import numpy as np

from pecan.data import format as fmt
from tests.shards import make_atoms

ROOT = Path(__file__).resolve().parents[2]


def test_written_shard_has_the_layout(tmp_path):
    rng = np.random.default_rng(0)
    atoms = [make_atoms(rng, 3, 5) for _ in range(3)]
    radii = np.full(8, 1.6, dtype=np.float32)
    complexes = [
        fmt.ShardComplex(
            "c1",
            [
                fmt.ShardSample("c1_pose0", atoms[0], {"rmsd": 3.5}, vdw=radii),
                fmt.ShardSample("c1_pose1", atoms[1], {"rmsd": 0.5}),
            ],
            crystal=fmt.ShardSample("ignored", atoms[2], {"rmsd": 0.0}),
            affinity=6.5,
        ),
        fmt.ShardComplex("c2", [fmt.ShardSample("c2_pose0", atoms[0], {})]),
    ]
    path = tmp_path / "s.hdf5"
    fmt.write_shard(path, complexes, compression="lzf")
    assert [p.name for p in tmp_path.iterdir()] == ["s.hdf5"]  # no temp file left beside it
    with h5py.File(path, "r") as h5:
        pose = h5[f"c1/{fmt.DEFAULT_POSE_GROUP}/c1_pose0"]
        assert np.array_equal(pose[fmt.DATASET_NAME][()], atoms[0]) and pose[fmt.DATASET_NAME].dtype == np.float32
        assert pose[fmt.DATASET_NAME].compression == "lzf"
        assert pose.attrs["rmsd"] == 3.5 and np.array_equal(pose.attrs[fmt.VDW_ATTR], radii)
        assert fmt.VDW_ATTR not in h5[f"c1/{fmt.DEFAULT_POSE_GROUP}/c1_pose1"].attrs
        assert np.array_equal(h5[f"c1/{fmt.DEFAULT_CRYSTAL_GROUP}/{fmt.DATASET_NAME}"][()], atoms[2])
        assert h5["c1"].attrs["affinity"] == 6.5 and "affinity" not in h5["c2"].attrs
        assert fmt.DEFAULT_CRYSTAL_GROUP not in h5["c2"] and math.isnan(fmt.ShardComplex("x", []).affinity)


def test_converter_and_generator_share_the_writer():
    writers = [str(p.relative_to(ROOT)) for p in (ROOT / "pecan").rglob("*.py") if "create_dataset" in p.read_text()]
    assert writers == ["pecan/data/format.py"]
