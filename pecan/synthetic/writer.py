"""Writes generated complexes as shards in the PECAN layout, plus their index CSV and, last, the synthetic marker."""

from __future__ import annotations

import inspect
import json
import pathlib

import numpy as np

from pecan.data import layout
from pecan.runtime.fileio import atomic_path, json_text
from pecan.runtime.progress import Progress
from pecan.synthetic.chemistry import CRYSTAL_GROUP, CRYSTAL_POSE_ID, DOCKING_GROUP, PDBID_SPACE
from pecan.synthetic.complexes import generate_complex

SHARD_NAME = "shard_{:03d}.hdf5"
# Written last by every generation (generate_dataset, ensure_dataset): it says the files beside it are synthetic
# (a checkpoint trained on them records training_data.kind: synthetic) and with which arguments they were made.
MARKER_NAME = ".synthetic.json"
GENERATOR_VERSION = 1

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


def marker_arguments(kwargs):
    """All generate_dataset arguments that shape the data, defaults filled, JSON-comparable."""
    bound = inspect.signature(generate_dataset).bind("unused", **kwargs)
    bound.apply_defaults()
    arguments = dict(bound.arguments)
    for key in ("out_dir", "progress"):
        arguments.pop(key)
    return json.loads(json.dumps(arguments))


def write_marker(out_dir, arguments, shard_names):
    """Write the completion marker of a generation (atomically): its arguments, shards and index."""
    record = {"version": GENERATOR_VERSION, "arguments": arguments, "shards": list(shard_names)}
    record["index"] = arguments["index_name"]
    with atomic_path(pathlib.Path(out_dir) / MARKER_NAME) as temporary:
        temporary.write_text(json_text(record, indent=1, sort_keys=True))


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
    """Write shards shard_000.hdf5 ... plus the index CSV into out_dir, then the synthetic marker; return the
    shard paths."""
    # Taken before any other name is bound: locals() here are exactly this call's arguments.
    arguments = marker_arguments({k: v for k, v in locals().items() if k not in ("out_dir", "progress")})
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
    write_marker(out_dir, arguments, [path.name for path in shards])
    return shards
