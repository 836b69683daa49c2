"""Reading a checkpoint for scoring: its contents, the config scoring runs under (the checkpoint's model
section, sample settings that agree with the trained ones) and the model with its weights.

``mapping_from_checkpoint`` rebuilds a run config from the checkpoint alone (`pecan predict` without a YAML,
`pecan score`): how samples are found, built and labelled, never where the training machine kept its files.
"""

from __future__ import annotations

import dataclasses
import logging
from pathlib import Path
from typing import Any

import torch

from pecan import config as config_module
from pecan.config import Config
from pecan.engine import checkpoint as ckpt
from pecan.engine.pins import check_layout, check_settings, sample_settings, trained_settings
from pecan.engine.state import CheckpointState
from pecan.runtime.errors import ConfigError

log = logging.getLogger(__name__)

# data.* keys a checkpoint's stored run config keeps when scoring without a YAML: how samples are found,
# built and labelled. Locations and io settings belong to the machine that trained, so they are dropped.
KEPT_DATA_KEYS = (
    "pose_group",
    "crystal_group",
    "rmsd_threshold",
    "pocket_radius",
    "edge_cutoff",
    "max_atoms",
    "max_edges",
    "on_bad_sample",
    "batch_size",
)


def mapping_from_checkpoint(state: CheckpointState) -> dict[str, Any]:
    """The run config mapping of a checkpoint's stored config, reduced to what scoring needs."""
    data = {key: value for key, value in state.saved_section("data").items() if key in KEPT_DATA_KEYS}
    model = dict(state.model_config or state.saved_section("model"))
    return {"data": data, "model": model, "train": {}}


def read_checkpoint(path: Path) -> CheckpointState:
    """The checkpoint's contents; ConfigError when it is missing, unreadable or not a PECAN checkpoint."""
    try:
        return CheckpointState.load(path, map_location="cpu")
    except (ValueError, FileNotFoundError) as err:
        raise ConfigError(f"cannot score with {path}: {err}") from err


def checkpoint_model_section(state: CheckpointState, config: Config, path: Path) -> Any:
    """The checkpoint's own model section, read through the config path training uses (any registered
    variant); the given config's for checkpoints that did not record one."""
    stored = state.model_config
    if stored is None:
        log.warning("checkpoint %s has no stored model config; assuming the given config's model section", path)
        return config.model
    section = config_module.build_model_section(dict(stored), f"checkpoint {path}")
    if section != config.model:
        given = dataclasses.asdict(config.model)
        differing = sorted(k for k, v in dataclasses.asdict(section).items() if given.get(k) != v)
        log.warning(
            "using the model config stored in %s; it differs from the given config's model section (%s)",
            path,
            ", ".join(differing),
        )
    return section


def _given_settings(config: Config, section: Any) -> dict[str, Any]:
    """The sample settings the given config asks for (its model keys only when it names the same variant)."""
    given = sample_settings(dataclasses.replace(config, model=section))
    for key in [k for k in given if k.startswith("model.")]:
        name = key.split(".", 1)[1]
        if config.model.name == section.name and hasattr(config.model, name):
            given[key] = getattr(config.model, name)
        else:
            del given[key]
    return given


def scoring_config(state: CheckpointState, config: Config, path: Path, allow: tuple[str, ...] = ()) -> Config:
    """The config scoring runs under: the checkpoint's model section, and sample settings that agree with
    the trained ones (ConfigError naming each disagreeing key unless allowed)."""
    section = checkpoint_model_section(state, config, path)
    trained = trained_settings(state, dataclasses.replace(config, model=section), path)
    check_layout(trained, path)
    changed = check_settings(trained, _given_settings(config, section), allow, path)
    for key in changed:
        if key.startswith("model."):
            name = key.split(".", 1)[1]
            section = dataclasses.replace(section, **{name: getattr(config.model, name)})
    return dataclasses.replace(config, model=section)


def build_scoring_model(state: CheckpointState, section: Any, path: Path, device: torch.device) -> torch.nn.Module:
    """Build the checkpoint's variant from ``section`` and load its weights; a mismatch is a ConfigError."""
    from model import build_model

    model = build_model(section.name, section, nn_type=section.nn_type)
    try:
        model.load_state_dict(ckpt.clean_state_dict(state.model))
    except RuntimeError as err:
        first = str(err).splitlines()[0:3]
        raise ConfigError(
            f"checkpoint {path} does not fit model config {dataclasses.asdict(section)}: it was "
            f"trained with a different model config or feature layout ({' '.join(first)})"
        ) from err
    return model.to(device).eval()


def load_model(path: Path, config: Config, device: torch.device) -> torch.nn.Module:
    """The checkpoint's model with its weights, built from its stored config (scoring_config's checks)."""
    state = read_checkpoint(Path(path))
    return build_scoring_model(state, scoring_config(state, config, Path(path)).model, Path(path), device)
