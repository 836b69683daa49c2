"""Sanity of one pose's atoms, the one home shared by every io_mode (graph.build_graph calls it).

A pose that cannot be a docked pose is a DataError naming shard and pose (or a counted skip under
data.on_bad_sample: skip) instead of a graph that trains silently: values that overflow float32, feature
columns outside their ranges, no protein atoms, all atoms on one point, coordinates in nm, a ligand far
from its receptor (another frame).
"""

from __future__ import annotations

import numpy as np

from pecan.data import layout
from pecan.runtime.errors import DataError

# Median distance from a ligand heavy atom to its nearest heavy neighbour. Covalent bonds between heavy
# atoms are 1.2-2.2 A (C=C 1.34, C-C 1.54, C-I 2.14); the same ligand in nm reads 0.12-0.22.
BOND_RANGE = (0.9, 3.0)
# Atoms closer together than this (A) in every direction are one point.
DEGENERATE_EXTENT = 1e-3
# Accepted range of each feature column of `data` (columns 3-21), wide enough for any FAST/PECAN producer.
FEATURE_RANGES = {
    **{c: (0.0, 1.0) for c in range(3, 12)},  # element one-hot
    12: (0.0, 8.0),  # hybridization
    13: (0.0, 12.0),  # heavy-atom valence
    14: (0.0, 12.0),  # hetero-atom valence
    15: (-8.0, 8.0),  # partial charge
    16: (-1.0, 1.0),  # molcode (checked exactly in graph.validate_atoms)
    **{c: (0.0, 1.0) for c in range(17, 22)},  # hydrophobic, aromatic, acceptor, donor, in ring
}
_COLUMNS = np.array(sorted(FEATURE_RANGES))
_LOW = np.array([FEATURE_RANGES[c][0] for c in _COLUMNS], dtype=np.float32)
_HIGH = np.array([FEATURE_RANGES[c][1] for c in _COLUMNS], dtype=np.float32)


def as_float32(values: np.ndarray, where: str, what: str = "'data'") -> np.ndarray:
    """Cast to float32; a value finite before the cast but infinite after (|x| > 3.4e38) is an error."""
    with np.errstate(over="ignore"):
        cast = np.asarray(values).astype(np.float32, copy=False)
    if not np.isfinite(cast).all():
        rows = int((~np.isfinite(cast)).reshape(len(cast), -1).any(axis=1).sum()) if cast.ndim else 1
        raise DataError(f"{where}: {what} has {rows} row(s) with values that overflow float32 (|x| > 3.4e38)")
    return cast


def check_features(atoms: np.ndarray, where: str) -> None:
    """Every feature column within FEATURE_RANGES; the error names the column and the first bad value."""
    values = atoms[:, _COLUMNS]
    bad = (values < _LOW) | (values > _HIGH)
    if not bad.any():
        return
    k = int(np.flatnonzero(bad.any(axis=0))[0])
    column, low, high = int(_COLUMNS[k]), float(_LOW[k]), float(_HIGH[k])
    raise DataError(
        f"{where}: 'data' column {column} must lie in [{low:g}, {high:g}]; {int(bad[:, k].sum())} "
        f"row(s) do not, e.g. {float(values[bad[:, k], k][0]):g}"
    )


def _extent(coords: np.ndarray) -> float:
    return float(np.ptp(coords, axis=0).max()) if len(coords) else 0.0


def check_geometry(atoms: np.ndarray, where: str) -> None:
    """Protein atoms present, atoms not all on one point, ligand bond lengths in Angstrom."""
    is_ligand = atoms[:, layout.MOLCODE_COLUMN] > 0
    coords = atoms[:, layout.COORD_COLUMNS].astype(np.float64)
    if is_ligand.all():
        raise DataError(f"{where}: pose has 0 protein atoms (no row with molcode -1); a pose needs its receptor")
    ligand = coords[is_ligand]
    if _extent(coords) < DEGENERATE_EXTENT or (len(ligand) > 1 and _extent(ligand) < DEGENERATE_EXTENT):
        raise DataError(
            f"{where}: degenerate geometry: all {'ligand ' if _extent(coords) else ''}atoms lie on one point"
        )
    if len(ligand) < 2:
        return
    if len(ligand) >= 4 and not ligand[:, 2].any():  # 3 atoms are always in one plane; 4 at z = 0 are 2D
        raise DataError(
            f"{where}: ligand coordinates are 2D: every one of its {len(ligand)} atoms has z = 0 (a 2D "
            "structure, e.g. an SDF depiction, not a 3D pose); give the docked or crystal 3D coordinates"
        )
    # A ligand is tens of atoms: the full pairwise matrix in numpy is cheaper than any library call overhead.
    distances = np.sqrt(((ligand[:, None, :] - ligand[None, :, :]) ** 2).sum(axis=-1))
    np.fill_diagonal(distances, np.inf)
    median = float(np.median(distances.min(axis=1)))
    low, high = BOND_RANGE
    if median < low:
        raise DataError(
            f"{where}: coordinates look like nm, not Angstrom: ligand heavy atoms are {median:.3g} A "
            f"from their nearest neighbour (median), bonds are {low:g}-{high:g} A"
        )
    if median > high:
        raise DataError(
            f"{where}: coordinates do not look like Angstrom: ligand heavy atoms are {median:.3g} A "
            f"from their nearest neighbour (median), bonds are {low:g}-{high:g} A"
        )


def check_pocket(n_protein_kept: int, pocket_radius: float, where: str) -> None:
    """After the crop: a ligand with no receptor atom within the pocket radius is in another frame."""
    if n_protein_kept == 0:
        raise DataError(
            f"{where}: ligand has no receptor atom within {pocket_radius:g} Å — different frames? "
            "(ligand and protein coordinates must share one frame)"
        )


def check_pose(atoms: np.ndarray, where: str) -> None:
    """Feature ranges and geometry of one validated float32 pose (before the crop)."""
    check_features(atoms, where)
    check_geometry(atoms, where)


def check_pose_features(values: np.ndarray, where: str) -> np.ndarray:
    """The 5 interaction counts read per sample from HDF5 attributes, as float32, finite and bounded."""
    values = as_float32(values, where, "the interaction counts")
    if (np.abs(values) > layout.POSE_FEATURE_LIMIT).any():
        raise DataError(
            f"{where}: an interaction count ({', '.join(layout.INTERACTION_ATTRS)}) exceeds "
            f"{layout.POSE_FEATURE_LIMIT:g}: {values.tolist()}"
        )
    return values
