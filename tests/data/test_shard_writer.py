"""The one shard writer (pecan.data.layout.write_shard): the layout the readers expect, read back by hand."""

import math
from pathlib import Path

import h5py
import numpy as np

from pecan.data import layout
from tests.shards import make_atoms

ROOT = Path(__file__).resolve().parents[2]


def test_written_shard_has_the_layout(tmp_path):
    rng = np.random.default_rng(0)
    atoms = [make_atoms(rng, 3, 5) for _ in range(3)]
    radii = np.full(8, 1.6, dtype=np.float32)
    complexes = [
        layout.ShardComplex(
            "c1",
            [
                layout.ShardSample("c1_pose0", atoms[0], {"rmsd": 3.5}, vdw=radii),
                layout.ShardSample("c1_pose1", atoms[1], {"rmsd": 0.5}),
            ],
            crystal=layout.ShardSample("ignored", atoms[2], {"rmsd": 0.0}),
            affinity=6.5,
        ),
        layout.ShardComplex("c2", [layout.ShardSample("c2_pose0", atoms[0], {})]),
    ]
    path = tmp_path / "s.hdf5"
    layout.write_shard(path, complexes, compression="lzf")
    assert [p.name for p in tmp_path.iterdir()] == ["s.hdf5"]  # no temp file left beside it
    with h5py.File(path, "r") as h5:
        pose = h5[f"c1/{layout.DEFAULT_POSE_GROUP}/c1_pose0"]
        assert np.array_equal(pose[layout.DATASET_NAME][()], atoms[0]) and pose[layout.DATASET_NAME].dtype == np.float32
        assert pose[layout.DATASET_NAME].compression == "lzf"
        assert pose.attrs["rmsd"] == 3.5 and np.array_equal(pose.attrs[layout.VDW_ATTR], radii)
        assert layout.VDW_ATTR not in h5[f"c1/{layout.DEFAULT_POSE_GROUP}/c1_pose1"].attrs
        assert np.array_equal(h5[f"c1/{layout.DEFAULT_CRYSTAL_GROUP}/{layout.DATASET_NAME}"][()], atoms[2])
        assert h5["c1"].attrs["affinity"] == 6.5 and "affinity" not in h5["c2"].attrs
        assert layout.DEFAULT_CRYSTAL_GROUP not in h5["c2"] and math.isnan(layout.ShardComplex("x", []).affinity)


def test_converter_and_generator_share_the_writer():
    writers = [str(p.relative_to(ROOT)) for p in (ROOT / "pecan").rglob("*.py") if "create_dataset" in p.read_text()]
    assert writers == ["pecan/data/layout.py"]
