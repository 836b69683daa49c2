"""Writes generated complexes as shards in the PECAN layout, plus their index CSV."""

from __future__ import annotations

import pathlib

import numpy as np

from pecan.data import layout
from pecan.runtime.progress import Progress
from pecan.synthetic.chemistry import CRYSTAL_GROUP, CRYSTAL_POSE_ID, DOCKING_GROUP, PDBID_SPACE
from pecan.synthetic.complexes import generate_complex

SHARD_NAME = "shard_{:03d}.hdf5"
MARKER_NAME = ".synthetic.json"  # written by pecan.synthetic.cache; stale once shards change

# ---------------------------------------------------------------- files


def _shard_complex(record, with_crystal):
    """A generated complex in the shard writer's terms (pecan.data.layout.write_shard)."""
    poses = [layout.ShardSample(record.pose_id(k), record.poses[k], attrs) for k, attrs in enumerate(record.pose_attrs)]
    crystal = layout.ShardSample(CRYSTAL_POSE_ID, record.crystal, record.crystal_attrs) if with_crystal else None
    return layout.ShardComplex(record.complex_id, poses, crystal, record.affinity)


def _index_rows(shard_name, record, with_crystal):
    """The index rows of one generated complex (pecan.data.layout.INDEX_COLUMNS): what its shard holds."""
    poses = [(record.pose_id(k), attrs, 0) for k, attrs in enumerate(record.pose_attrs)]
    if with_crystal:
        poses.insert(0, (CRYSTAL_POSE_ID, record.crystal_attrs, 1))
    for pose_id, attrs, is_crystal in poses:
        shard_attrs = dict(attrs)
        yield {
            "shard": shard_name,
            "complex_id": record.complex_id,
            "pose_id": pose_id,
            "affinity": record.affinity,
            "is_crystal": is_crystal,
            "docking_score": shard_attrs.pop("score"),  # the shard attribute ``score``
            **shard_attrs,
        }


def _check_range(name, bounds, minimum):
    lo, hi = bounds
    if not (isinstance(lo, (int, np.integer)) and isinstance(hi, (int, np.integer)) and minimum <= lo <= hi):
        raise ValueError(f"{name} must be integers (lo, hi) with {minimum} <= lo <= hi, got {bounds!r}")
    return int(lo), int(hi)


def _shard_complexes(shard, shard_name, complexes_per_shard, settings, with_crystal, rows, bar):
    """Generate one shard's complexes in order, appending their index rows to ``rows`` as they are written."""
    for j in range(complexes_per_shard):
        record = generate_complex(shard * complexes_per_shard + j, **settings)
        rows.extend(_index_rows(shard_name, record, with_crystal))
        bar.update()
        yield _shard_complex(record, with_crystal)


def generate_dataset(
    out_dir,
    n_shards=2,
    complexes_per_shard=10,
    poses_per_complex=(10, 30),
    pocket_atoms=(300, 900),
    ligand_atoms=(15, 60),
    with_crystal=True,
    rmsd_threshold=2.0,
    seed=0,
    index_name="index.csv",
    progress=True,
):
    """Write shards shard_000.hdf5 ... plus the index CSV into out_dir; return the shard paths."""
    settings = {
        "poses_per_complex": _check_range("poses_per_complex", poses_per_complex, 1),
        "pocket_atoms": _check_range("pocket_atoms", pocket_atoms, 1),
        "ligand_atoms": _check_range("ligand_atoms", ligand_atoms, 6),
        "rmsd_threshold": float(rmsd_threshold),
        "seed": int(seed),
    }
    if n_shards < 1 or complexes_per_shard < 1:
        raise ValueError("n_shards and complexes_per_shard must be >= 1")
    if n_shards * complexes_per_shard > PDBID_SPACE:
        raise ValueError(f"at most {PDBID_SPACE} complexes have distinct PDB-like ids")
    out_dir = pathlib.Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    # whatever marker was here described other files from now on
    (out_dir / MARKER_NAME).unlink(missing_ok=True)
    shards, rows = [], []
    with Progress(n_shards * complexes_per_shard, "synthetic", "complex", progress) as bar:
        for shard in range(n_shards):
            path = out_dir / SHARD_NAME.format(shard)
            layout.write_shard(
                path,
                _shard_complexes(shard, path.name, complexes_per_shard, settings, with_crystal, rows, bar),
                pose_group=DOCKING_GROUP,
                crystal_group=CRYSTAL_GROUP,
            )
            shards.append(path)
    layout.write_index_csv(rows, out_dir / index_name)
    return shards
