"""Tiny hand-made shards for tests (independent of the synthetic generator)."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import h5py
import numpy as np
import pandas as pd

from pecan.data import layout


def make_atoms(rng: np.random.Generator, n_ligand: int = 6, n_protein: int = 20, shift: float = 0.0) -> np.ndarray:
    """A [n, 22] array: ligand rows (molcode +1) near the origin, protein rows around them.

    The ligand is a chain of 1.5 A steps (a bond length: the geometry checks reject points closer or
    farther apart than bonded atoms), centred on the origin plus ``shift``."""
    atoms = np.zeros((n_ligand + n_protein, layout.N_COLUMNS), dtype=np.float32)
    steps = rng.normal(0, 1.5, (n_ligand, 3))
    steps /= np.linalg.norm(steps, axis=1, keepdims=True)
    for k in range(1, n_ligand):  # never turn back by more than 90 degrees: no two atoms closer than a bond
        if steps[k] @ steps[k - 1] < 0:
            steps[k] = -steps[k]
    chain = np.cumsum(1.5 * steps, axis=0)
    atoms[:n_ligand, :3] = chain - chain.mean(axis=0) + shift
    direction = rng.normal(size=(n_protein, 3))
    direction /= np.linalg.norm(direction, axis=1, keepdims=True)
    atoms[n_ligand:, :3] = direction * rng.uniform(3.0, 8.0, (n_protein, 1))
    element = rng.integers(3, 12, n_ligand + n_protein)
    atoms[np.arange(len(atoms)), element] = 1.0
    atoms[:, 15] = rng.normal(0, 0.3, len(atoms))
    atoms[:n_ligand, layout.MOLCODE_COLUMN] = 1.0
    atoms[n_ligand:, layout.MOLCODE_COLUMN] = -1.0
    atoms[:, 17:22] = rng.integers(0, 2, (len(atoms), 5))
    return atoms


def pose_attrs(rng: np.random.Generator, rmsd: float) -> dict:
    """A full set of pose attributes."""
    attrs = {"rmsd": rmsd, "score": float(rng.uniform(-10, -4)), "label": int(rmsd < 2.0)}
    for name in layout.INTERACTION_ATTRS:
        attrs[name] = float(rng.integers(0, 6))
    return attrs


def write_shard(
    path: Path,
    n_complexes: int = 2,
    n_poses: int = 3,
    seed: int = 0,
    crystal: bool = True,
    prefix: str = "c",
    crystal_name: str = "pdbbind",
    rmsds: Optional[list] = None,
) -> list[dict]:
    """Write a shard in the FAST layout; returns the index rows it holds."""
    rng = np.random.default_rng(seed)
    rows = []
    with h5py.File(path, "w") as handle:
        for c in range(n_complexes):
            pdbid = f"{prefix}{seed}{c:02d}"
            group = handle.create_group(pdbid)
            group.attrs["affinity"] = float(rng.uniform(2, 10))
            for p in range(n_poses):
                poseid = f"{pdbid}_pose{p}"
                rmsd = rmsds[p] if rmsds else float(rng.uniform(0, 6))
                pose = group.create_group(f"{layout.DEFAULT_POSE_GROUP}/{poseid}")
                pose.create_dataset("data", data=make_atoms(rng, shift=rmsd / 3))
                for key, value in pose_attrs(rng, rmsd).items():
                    pose.attrs[key] = value
                rows.append({"pdbid": pdbid, "poseid": poseid, "is_crystal": 0, **dict(pose.attrs)})
            if crystal:
                xtal = group.create_group(f"pybel/processed/{crystal_name}")
                xtal.create_dataset("data", data=make_atoms(rng))
                for key, value in pose_attrs(rng, 0.0).items():
                    xtal.attrs[key] = value
                rows.append({"pdbid": pdbid, "poseid": crystal_name, "is_crystal": 1, **dict(xtal.attrs)})
    for row in rows:
        row["shard"] = str(path)
    return rows


def write_dataset(directory: Path, n_shards: int = 2, **kwargs) -> tuple[list[Path], Path]:
    """Several shards plus an index CSV (relative shard names); returns (shards, csv)."""
    directory.mkdir(parents=True, exist_ok=True)
    shards, rows = [], []
    for s in range(n_shards):
        path = directory / f"shard_{s}.hdf5"
        rows += write_shard(path, seed=s, **kwargs)
        shards.append(path)
    frame = pd.DataFrame(rows)
    frame["shard"] = [Path(p).name for p in frame["shard"]]
    csv = directory / "index.csv"
    frame.to_csv(csv, index=False)
    return shards, csv


def set_atom_value(pose: h5py.Group, row: int, column: int, value: float) -> None:
    """Rewrite one value of a pose's atom array (a new dataset, as a tool that rewrites the array would)."""
    atoms = pose["data"][()]
    atoms[row, column] = value
    del pose["data"]
    pose.create_dataset("data", data=atoms)


def poison_poses(data_dir: Path, chosen) -> list[str]:
    """Put a NaN into atom 0 of every docked pose that ``chosen(complex group, pose names)`` returns, in every
    shard of data_dir; returns the poses poisoned."""
    poisoned = []
    for shard in sorted(data_dir.glob("*.hdf5")):
        with h5py.File(shard, "a") as handle:
            for pdbid in handle:
                poses = handle[f"{pdbid}/{layout.DEFAULT_POSE_GROUP}"]
                for name in chosen(poses, list(poses)):
                    set_atom_value(poses[name], 0, 0, np.nan)
                    poisoned.append(name)
    return poisoned


FULL_CSV_COLUMNS = (*layout.REQUIRED_CSV_COLUMNS, "is_crystal", *layout.INTERACTION_ATTRS)


def with_required_columns(table):
    """An index CSV's text (or DataFrame) with the columns it lacks of is_crystal and the interaction counts
    added as 0 (as the shards of tests/shards.py carry counts), for tests about other columns."""
    if isinstance(table, pd.DataFrame):
        return table.assign(**{c: 0 for c in FULL_CSV_COLUMNS if c not in table.columns})
    lines = table.splitlines()
    added = [c for c in FULL_CSV_COLUMNS if c not in lines[0].split(",")]
    return (
        "\n".join([lines[0] + "".join("," + c for c in added)] + [line + ",0" * len(added) for line in lines[1:]])
        + "\n"
    )
