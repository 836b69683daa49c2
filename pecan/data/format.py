"""Shard layout constants (LLNL FAST/PECAN ML-HDF): group names, columns, attribute names."""
from __future__ import annotations

N_COLUMNS = 22
COORD_COLUMNS = slice(0, 3)
FEATURE_COLUMNS = slice(3, 22)
N_FEATURES = 19
MOLCODE_COLUMN = 16
# Position of molcode inside the 19 feature columns.
MOLCODE_FEATURE = MOLCODE_COLUMN - FEATURE_COLUMNS.start

DATASET_NAME = "data"
DEFAULT_POSE_GROUP = "pybel/processed/docking"
DEFAULT_CRYSTAL_GROUP = "pybel/processed/pdbbind"
# PECAN files name the crystal group "crystal", FAST files "pdbbind"; both are accepted.
CRYSTAL_GROUP_NAMES = ("pdbbind", "crystal")

INTERACTION_ATTRS = ("num_hbonds", "hpbond", "habond", "sbond", "pbond")
POSE_ATTRS = ("rmsd", "score", "label") + INTERACTION_ATTRS

INDEX_COLUMNS = ("shard", "pdbid", "poseid", "label", "rmsd", "affinity", "score",
                 *INTERACTION_ATTRS, "is_crystal")
REQUIRED_INDEX_COLUMNS = ("shard", "pdbid", "poseid")

SHARD_SUFFIXES = (".hdf5", ".hdf", ".h5")


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


def feature_layout() -> dict:
    """What a model's inputs mean (recorded in checkpoints; a model trained on another layout cannot score)."""
    return {"n_features": N_FEATURES, "molcode_feature": MOLCODE_FEATURE, "pose_features": list(INTERACTION_ATTRS)}
