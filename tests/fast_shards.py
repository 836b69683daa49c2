"""Shards and label CSVs written exactly as LLNL FAST's own writer writes them (docs/shard-format.md, "What FAST's
own writer does"): lzf-compressed float32 ``data``, a ``van_der_waals`` attribute on every pose and crystal group,
pose groups named "1", "2", ..., the complex's ``affinity`` 0, the crystal in its own group
``pybel/processed/pdbbind``, and no rmsd, label, score or interaction attribute anywhere; the labels live in a
CSV beside the shards with the columns ``shard, pdbid, poseid, label, rmsd, score`` and nothing else."""

from __future__ import annotations

from pathlib import Path

import h5py
import numpy as np
import pandas as pd

from pecan.data import layout
from tests.shards import make_atoms

FAST_CSV_COLUMNS = ["shard", "pdbid", "poseid", "label", "rmsd", "score"]


def _fast_group(parent: h5py.Group, name: str, atoms: np.ndarray) -> None:
    group = parent.create_group(name)
    group.create_dataset("data", data=atoms.astype(np.float32), compression="lzf")
    group.attrs["van_der_waals"] = layout.element_vdw(atoms[:, layout.FEATURE_COLUMNS])


def write_fast_shard(path: Path, n_complexes: int = 3, n_poses: int = 4, seed: int = 0) -> list[dict]:
    """Write one shard as FAST writes it; returns its label CSV rows (docking poses only, FAST's columns)."""
    rng = np.random.default_rng(seed)
    rows = []
    with h5py.File(path, "w") as handle:
        for c in range(n_complexes):
            pdbid = f"{seed}f{c:02d}"
            complex_group = handle.create_group(pdbid)
            complex_group.attrs["affinity"] = 0.0
            crystal = make_atoms(rng)
            crystal[:, :3] -= crystal[crystal[:, layout.MOLCODE_COLUMN] > 0, :3].mean(axis=0)
            _fast_group(complex_group, layout.DEFAULT_CRYSTAL_GROUP, crystal)
            docking = complex_group.create_group(layout.DEFAULT_POSE_GROUP)
            for p in range(1, n_poses + 1):
                rmsd = float(rng.uniform(0.3, 1.5) if p % 2 else rng.uniform(3.0, 8.0))
                _fast_group(docking, str(p), make_atoms(rng, shift=rmsd / 3))
                rows.append(
                    {"shard": path.name, "pdbid": pdbid, "poseid": str(p), "label": int(rmsd < 2.0), "rmsd": rmsd}
                    | {"score": float(rng.uniform(-10, -4))}
                )
    return rows


def write_fast_dataset(directory: Path, n_shards: int = 2, **kwargs) -> tuple[list[Path], Path]:
    """FAST's shards plus FAST's own label CSV (``labels.csv``, its columns only); returns (shards, csv)."""
    directory.mkdir(parents=True, exist_ok=True)
    shards, rows = [], []
    for s in range(n_shards):
        shard = directory / f"shard_{s:03d}.hdf5"
        rows += write_fast_shard(shard, seed=s, **kwargs)
        shards.append(shard)
    csv = directory / "labels.csv"
    pd.DataFrame(rows, columns=FAST_CSV_COLUMNS).to_csv(csv, index=False)
    return shards, csv
