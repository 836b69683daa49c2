"""What a checkpoint pins about the model's inputs: every setting that shapes a sample, and the complexes the
model was trained and validated on.

Training stores both (``Trainer.checkpoint_state``); scoring reads them back, so a checkpoint scores poses built the
way it was trained on, and every scored complex can say whether the model has seen it.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

import model as registry
from pecan.data import layout
from pecan.engine.state import CheckpointState
from pecan.runtime.errors import ConfigError

log = logging.getLogger(__name__)

DATA_KEYS = ("pocket_radius", "edge_cutoff")
"""data.* keys that shape a sample (the pocket crop and the radius graph); io-only keys are not pinned."""
LAYOUT_KEY = "feature_layout"
SPLITS = ("train", "val", "test", "unseen")
"""Values of scores.csv's split column; 'unknown' only for a checkpoint that predates the record."""


def sample_settings(config) -> dict[str, Any]:
    """Every config setting that shapes a sample, keyed ``section.key``: the data keys and the variant's
    sample keys (the feature layout is the checkpoint's own ``feature_layout`` entry)."""
    settings: dict[str, Any] = {f"data.{key}": getattr(config.data, key) for key in DATA_KEYS}
    entry = registry.variant(config.model.name)
    settings.update({f"model.{key}": getattr(config.model, key) for key in entry.sample_keys})
    return settings


def _from_run_config(saved: Any, key: str) -> Any:
    """The value of ``section.key`` in a checkpoint's stored run config dict, or None."""
    if not isinstance(saved, dict) or "." not in key:
        return None
    section, name = key.split(".", 1)
    return (saved.get(section) or {}).get(name)


def trained_settings(state: CheckpointState, config, path: Path) -> dict[str, Any]:
    """The checkpoint's sample settings. A checkpoint written before they were stored gets them from its
    stored run config, else from ``config`` and this code; a warning lists what was assumed."""
    assumed: list[str] = []
    stored = state.sample_settings
    settings = dict(stored) if isinstance(stored, dict) else _assumed_settings(state, config, assumed)
    stored_layout = state.feature_layout
    if stored_layout is None:
        stored_layout = layout.feature_layout()
        assumed.append(f"{LAYOUT_KEY}={stored_layout} (this code's)")
    settings[LAYOUT_KEY] = stored_layout
    if assumed:
        log.warning("checkpoint %s predates pinned sample settings; assumed: %s", path, "; ".join(assumed))
    return settings


def _assumed_settings(state: CheckpointState, config, assumed: list[str]) -> dict[str, Any]:
    """Sample settings of a checkpoint that did not store them: from its stored run config where it has one,
    else the given config's; each assumption is appended to ``assumed``."""
    settings = sample_settings(config)
    for key in settings:
        value = _from_run_config(state.config, key)
        if value is None:
            assumed.append(f"{key}={settings[key]!r} (the given config's)")
        else:
            settings[key] = value
            assumed.append(f"{key}={value!r} (its stored run config)")
    return settings


def check_layout(trained: dict[str, Any], path: Path) -> None:
    """A model trained on another feature layout cannot score these shards: ConfigError naming both."""
    trained_layout = trained.get(LAYOUT_KEY)
    if trained_layout is not None and trained_layout != layout.feature_layout():
        raise ConfigError(
            f"checkpoint {path} was trained on feature layout {trained_layout}, but these shards have "
            f"{layout.feature_layout()}: it cannot score them"
        )


def check_settings(trained: dict[str, Any], given: dict[str, Any], allowed: Iterable[str], path: Path) -> list[str]:
    """Refuse a given setting that disagrees with the trained one unless its key is in ``allowed``; returns
    the allowed keys that differ (logged as warnings). ConfigError names each key, trained and given value."""
    allowed = set(allowed)
    changeable = sorted(key for key in trained if key != LAYOUT_KEY)
    unknown = sorted(allowed - set(changeable))
    if unknown:
        raise ConfigError(
            f"--allow-setting-change {', '.join(unknown)}: not a pinned setting of checkpoint "
            f"{path}; pinned: {', '.join(changeable)}"
        )
    differing = [key for key in changeable if key in given and given[key] != trained[key]]
    refused = [key for key in differing if key not in allowed]
    if refused:
        listed = "; ".join(f"{key}: trained {trained[key]!r}, given {given[key]!r}" for key in refused)
        raise ConfigError(
            f"checkpoint {path} was trained on samples built with other settings ({listed}); score "
            f"with the trained values (drop the --set or edit the config), or pass "
            f"--allow-setting-change KEY for each key you mean to change"
        )
    for key in differing:
        log.warning(
            "%s: scoring with %r, the model was trained with %r (--allow-setting-change)", key, given[key], trained[key]
        )
    return differing


def split_record(train_index: pd.DataFrame, val_index: pd.DataFrame) -> dict[str, list[str]]:
    """The complexes a run trained and validated on (stored in its checkpoints)."""
    return {"train": sorted(set(train_index["complex_id"])), "val": sorted(set(val_index["complex_id"]))}


def assign_splits(complexes: pd.Series, record: dict | None, from_test: Iterable[str]) -> np.ndarray:
    """The split of each scored complex: train/val by the checkpoint's record, else test when it came from
    the test inputs, else unseen; 'unknown' for every complex when the checkpoint has no record. A complex id is
    the same complex whatever its case (``1GPK_HUP`` is ``1gpk_hup``, as PDB codes are): one warning counts the
    ids that matched the record only so."""
    if not isinstance(record, dict):
        return np.full(len(complexes), "unknown", dtype=object)
    known = {str(c): "val" for c in record.get("val", ())}
    known.update({str(c): "train" for c in record.get("train", ())})  # a complex in both is a training one
    folded = {c.strip().casefold(): "val" for c, split in known.items() if split == "val"}
    folded.update({c.strip().casefold(): "train" for c, split in known.items() if split == "train"})
    test = {str(c).strip().casefold() for c in from_test}
    found, by_case = [], []
    for complex_id in map(str, complexes):
        key = complex_id.strip().casefold()
        split = known.get(complex_id)
        if split is None and key in folded:
            split = folded[key]
            by_case.append(complex_id)
        found.append(split or ("test" if key in test else "unseen"))
    if by_case:
        log.warning(
            "%d scored complex id(s) match the checkpoint's train/val record only when case is ignored (first: "
            "%r); counted in the split of the id they match",
            len(by_case),
            by_case[0],
        )
    return np.array(found, dtype=object)


SYNTHETIC_MARKER = ".synthetic.json"
"""The synthetic generator's completion marker beside its shards (pecan.synthetic.writer.MARKER_NAME)."""
DEFAULT_SCORE_PROPERTY = "docking_score"
"""The SD property `pecan redock` writes: assumed for a checkpoint that does not record its own."""


def shard_attrs(shards: Iterable[str]) -> dict[str, dict[str, Any]]:
    """The root attributes of each shard (the converter's ``source`` and ``score_properties``); a shard that
    cannot be opened has none."""
    import h5py

    found: dict[str, dict[str, Any]] = {}
    for shard in sorted(set(map(str, shards))):
        try:
            with h5py.File(shard, "r", locking=False) as handle:
                found[shard] = {key: handle.attrs[key] for key in handle.attrs}
        except (OSError, KeyError, RuntimeError):
            found[shard] = {}
    return found


def is_synthetic(shards: Iterable[str]) -> bool:
    """Whether every shard lies beside the synthetic generator's marker."""
    shards = list(shards)
    return bool(shards) and all((Path(s).parent / SYNTHETIC_MARKER).exists() for s in shards)


def index_digest(index: pd.DataFrame) -> str:
    """A hash of the poses a run trained on: complex, pose and label of every row, in sorted order."""
    import hashlib

    rows = sorted(f"{c}\t{p}\t{lab}" for c, p, lab in zip(index["complex_id"], index["pose_id"], index["label"]))
    return hashlib.sha256("\n".join(rows).encode()).hexdigest()[:16]


def training_data_record(config, train_index: pd.DataFrame) -> dict[str, Any]:
    """What a checkpoint says about its training data: ``kind`` (synthetic demo data or real), the index
    digest and counts, and the docking score it learnt from (``docking_score``: the SD property the converter
    read, lower is better, and whether the model takes it as input)."""
    shards = list(train_index["shard"]) if "shard" in train_index else []
    attrs = shard_attrs(shards)
    synthetic = bool(config.synthetic.enabled) or is_synthetic(attrs.keys())
    properties = sorted(
        {str(p) for a in attrs.values() for p in json_list(a.get("score_properties")) if str(p).strip()}
    )
    return {
        "kind": "synthetic" if synthetic else "real",
        "index_digest": index_digest(train_index),
        "poses": int(len(train_index)),
        "complexes": int(train_index["complex_id"].nunique()),
        "docking_score": {
            "property": properties[0] if len(properties) == 1 else "",
            "properties": properties,
            "lower_is_better": True,
            "model_input": bool(getattr(config.model, "use_docking_score", False)),
        },
    }


def json_list(value: Any) -> list:
    """A JSON list stored as an HDF5 string attribute (empty when absent or unreadable)."""
    import json

    if value is None:
        return []
    try:
        parsed = json.loads(value.decode() if isinstance(value, bytes) else str(value))
    except ValueError:
        return []
    return parsed if isinstance(parsed, list) else []


def score_property_default(state: CheckpointState) -> tuple[str, bool]:
    """(the SD property pecan score reads docking scores from by default, whether the model needs it): the
    checkpoint's record, else ``docking_score`` for a model that takes docking scores, else none."""
    model = state.model_config or {}
    needed = bool(model.get("use_docking_score", False))
    record = state.docking_score_record
    recorded = str(record.get("property") or "")
    return recorded or (DEFAULT_SCORE_PROPERTY if needed else ""), needed


def warn_if_synthetic(state: CheckpointState, path: Path, shards: Iterable[str]) -> None:
    """One warning when a model trained on synthetic demo data scores poses that are not synthetic."""
    if (state.training_data or {}).get("kind") == "synthetic" and not is_synthetic(shards):
        log.warning("checkpoint %s was trained on synthetic demo data: its scores of real poses mean nothing", path)
