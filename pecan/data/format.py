"""Shard layout constants (LLNL FAST/PECAN ML-HDF): group names, columns, attribute names."""
from __future__ import annotations

import numpy as np

N_COLUMNS = 22
COORD_COLUMNS = slice(0, 3)
FEATURE_COLUMNS = slice(3, 22)
N_FEATURES = 19
MOLCODE_COLUMN = 16
# Position of molcode inside the 19 feature columns.
MOLCODE_FEATURE = MOLCODE_COLUMN - FEATURE_COLUMNS.start

# Per-atom van der Waals radius (float32 [n_atoms], same row order as `data`), written by FAST on every
# pose and crystal group; derived from the element one-hot when a shard lacks it.
VDW_ATTR = "van_der_waals"
# Element one-hot inside the 19 feature columns: B, C, N, O, P, S, Se, halogen, metal.
ELEMENT_FEATURES = slice(0, 9)
# Bondi radii (Angstrom); halogen uses Cl, metal a typical 2.0; an atom with no element bit gets carbon's.
VDW_RADII = (1.92, 1.70, 1.55, 1.52, 1.80, 1.80, 1.90, 1.75, 2.00)
VDW_DEFAULT = 1.70

DATASET_NAME = "data"
DEFAULT_POSE_GROUP = "pybel/processed/docking"
DEFAULT_CRYSTAL_GROUP = "pybel/processed/pdbbind"
# PECAN files name the crystal group "crystal", FAST files "pdbbind"; both are accepted.
CRYSTAL_GROUP_NAMES = ("pdbbind", "crystal")

INTERACTION_ATTRS = ("num_hbonds", "hpbond", "habond", "sbond", "pbond")
# Largest magnitude accepted for an interaction count (hydrogen bonds, contacts, ... of one pose).
POSE_FEATURE_LIMIT = 1e4
POSE_ATTRS = ("rmsd", "score", "label") + INTERACTION_ATTRS

INDEX_COLUMNS = ("shard", "pdbid", "poseid", "label", "rmsd", "affinity", "score",
                 *INTERACTION_ATTRS, "is_crystal")
REQUIRED_INDEX_COLUMNS = ("shard", "pdbid", "poseid")

SHARD_SUFFIXES = (".hdf5", ".hdf", ".h5")

# Data path levels, cheapest last; every level but "packed" reads HDF5 per sample.
IO_MODES = ("reopen", "handle_cache", "hoist", "decode_cache", "packed")
H5_LEVELS = IO_MODES[:-1]


def crystal_candidates(crystal_group: str) -> list[str]:
    """Crystal group paths to try: the configured one, then its sibling under the other accepted name."""
    parent, _, name = crystal_group.rpartition("/")
    paths = [crystal_group]
    for other in CRYSTAL_GROUP_NAMES:
        if other != name:
            paths.append(f"{parent}/{other}" if parent else other)
    return paths


def sample_path(pdbid: str, poseid: str, is_crystal: bool, pose_group: str, crystal_group: str) -> str:
    """HDF5 path of the group that holds one sample's ``data`` dataset.

    Crystal rows carry the crystal group's own name as poseid, so the path is derivable without a lookup.
    """
    if is_crystal:
        parent = crystal_group.rpartition("/")[0]
        return f"{pdbid}/{parent}/{poseid}" if parent else f"{pdbid}/{poseid}"
    return f"{pdbid}/{pose_group}/{poseid}"


def element_vdw(features: np.ndarray) -> np.ndarray:
    """Van der Waals radius per atom from the element one-hot of the 19 feature columns (float32 [n])."""
    elements = features[:, ELEMENT_FEATURES].astype(np.float32)
    known = np.minimum(elements.sum(axis=1), 1.0)
    return (elements @ np.asarray(VDW_RADII, dtype=np.float32) + (1.0 - known) * VDW_DEFAULT).astype(np.float32)
def feature_layout() -> dict:
    """What a model's inputs mean (recorded in checkpoints; a model trained on another layout cannot score)."""
    return {"n_features": N_FEATURES, "molcode_feature": MOLCODE_FEATURE, "pose_features": list(INTERACTION_ATTRS)}


# ---------------------------------------------------------------------------- walking a shard
# The one walk over a complex's samples and the one reading of scalar attributes, shared by indexing
# (pecan.data.index) and packing (pecan.data.packing).

def complex_samples(complex_group, pose_group: str, crystal_group: str, use_crystal: bool = True):
    """Yield (poseid, is_crystal, group) for every docked pose of an open complex group, then its crystal
    pose (the configured group or its sibling name) when ``use_crystal``. A complex without the pose group
    yields only its crystal; callers decide whether that is an error."""
    poses = complex_group.get(pose_group)
    for poseid in poses if poses is not None else ():
        yield poseid, False, poses[poseid]
    if use_crystal:
        for candidate in crystal_candidates(crystal_group):
            group = complex_group.get(candidate)
            if group is not None:
                yield candidate.rpartition("/")[2], True, group
                return


def sample_attrs(group) -> dict:
    """A pose group's attributes; some producers put them on the ``data`` dataset instead (group wins)."""
    attrs = dict(group.attrs)
    dataset = group.get(DATASET_NAME)
    if dataset is not None and hasattr(dataset, "attrs"):
        attrs = {**dict(dataset.attrs), **attrs}
    return attrs


def scalar(attrs, name: str) -> float:
    """A scalar attribute as a float (its first element), NaN when absent."""
    value = attrs.get(name)
    if value is None:
        return np.nan
    return float(np.asarray(value).reshape(-1)[0])
