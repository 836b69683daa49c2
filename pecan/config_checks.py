"""Value checks of a loaded config that types alone cannot express: ranges of every numeric key, device
names and availability, the model variant, and compatibility with the checkpoint a run resumes from.

Every error is a ConfigError naming the key (main_app exits 2 on it, before anything is written).
"""
from __future__ import annotations

import dataclasses
import re
from typing import Any, Optional

from pecan.config import Config, ConfigError

DEVICE_PATTERN = re.compile(r"auto|cpu|cuda(:\d+)?")


def _range_checks(config: Config) -> list[tuple[bool, str, str]]:
    """(ok, key, requirement) for every numeric key."""
    d, m, t, s = config.data, config.model, config.train, config.synthetic
    return [
        (0.0 <= d.val_fraction < 1.0, "data.val_fraction", "must be in [0, 1)"),
        (d.split_seed >= 0, "data.split_seed", "must be >= 0"),
        (d.rmsd_threshold > 0, "data.rmsd_threshold", "must be > 0"),
        (d.pocket_radius > 0, "data.pocket_radius", "must be > 0"),
        (d.edge_cutoff > 0, "data.edge_cutoff", "must be > 0"),
        (d.batch_size >= 1, "data.batch_size", "must be >= 1"),
        (d.num_workers >= -1, "data.num_workers", "must be >= -1"),
        (d.max_atoms >= 2, "data.max_atoms", "must be >= 2"),
        (d.max_edges >= 1, "data.max_edges", "must be >= 1"),
        *_model_ranges(m, config),
        (t.epochs >= 1, "train.epochs", "must be >= 1"),
        (t.lr > 0, "train.lr", "must be > 0"),
        (t.weight_decay >= 0, "train.weight_decay", "must be >= 0"),
        (t.warmup_steps >= 0, "train.warmup_steps", "must be >= 0"),
        (t.grad_clip >= 0, "train.grad_clip", "must be >= 0"),
        (t.seed >= 0, "train.seed", "must be >= 0"),
        (t.max_steps_per_epoch >= 0, "train.max_steps_per_epoch", "must be >= 0"),
        (t.ranking_loss_weight >= 0, "train.ranking_loss_weight", "must be >= 0"),
        (t.pos_weight == "auto" or t.pos_weight > 0, "train.pos_weight", "must be > 0 or auto"),
        (t.sync_every_minutes > 0, "train.sync_every_minutes", "must be > 0"),
        (s.shards >= 1, "synthetic.shards", "must be >= 1"),
        (s.complexes_per_shard >= 1, "synthetic.complexes_per_shard", "must be >= 1"),
        (s.seed >= 0, "synthetic.seed", "must be >= 0"),
    ]


def _model_ranges(m: Any, config: Config) -> list[tuple[bool, str, str]]:
    """The EGNN section's ranges, or the problems a variant's own config dataclass reports."""
    from pecan.config import ModelConfig

    if isinstance(m, ModelConfig):
        return [(m.hidden >= 1, "model.hidden", "must be >= 1"),
                (m.layers >= 1, "model.layers", "must be >= 1"),
                (0.0 <= m.dropout < 1.0, "model.dropout", "must be in [0, 1)"),
                (m.rbf >= 1, "model.rbf", "must be >= 1"),
                (m.cutoff > 0, "model.cutoff", "must be > 0")]
    return [(False, key, message) for key, message in m.problems(config)]


def _non_finite_keys(config: Config) -> list[str]:
    """Float keys holding NaN or infinity (YAML's .nan / .inf)."""
    bad = []
    for section in dataclasses.fields(config):
        values = getattr(config, section.name)
        for f in dataclasses.fields(values):
            value = getattr(values, f.name)
            if isinstance(value, float) and not (value == value and abs(value) != float("inf")):
                bad.append(f"{section.name}.{f.name}")
    return bad


def _model_check(config: Config) -> Optional[str]:
    """Why model.name / model.nn_type select no buildable variant, or None."""
    from model import available, resolve_name

    try:
        name = resolve_name(config.model.name, config.model.nn_type)
    except ValueError as err:
        return f"'{'model.nn_type' if config.model.nn_type is not None else 'model.name'}': {err}"
    if name not in available():
        key = "model.nn_type" if config.model.nn_type is not None else "model.name"
        return f"'{key}': model {name!r} is not implemented in this release; available: {', '.join(available())}"
    return None


def check_values(config: Config, source: str = "<config>") -> None:
    """Value checks that types alone cannot express; each error names the key."""
    for key in _non_finite_keys(config):
        raise ConfigError(f"{source}: '{key}' must be a finite number")
    for ok, key, message in _range_checks(config):
        if not ok:
            raise ConfigError(f"{source}: '{key}' {message}, got {_value(config, key)!r}")
    if not config.train.out_dir:
        raise ConfigError(f"{source}: 'train.out_dir' is required")
    if not DEVICE_PATTERN.fullmatch(config.train.device):
        raise ConfigError(f"{source}: 'train.device' must be auto, cpu, cuda or cuda:N, got {config.train.device!r}")
    problem = _model_check(config)
    if problem:
        raise ConfigError(f"{source}: {problem}")
    has_data = config.data.train_csvs or config.data.train_fns or config.data.data_dir
    if not has_data:
        raise ConfigError(f"{source}: 'data.train_csvs', 'data.train_fns' or 'data.data_dir' is required")
    if config.synthetic.enabled and not config.data.data_dir:
        raise ConfigError(f"{source}: 'synthetic.enabled' needs 'data.data_dir' (where the data is generated)")


def _value(config: Config, key: str) -> Any:
    section, name = key.split(".")
    return getattr(getattr(config, section), name)


def check_device(config: Config, source: str = "<config>") -> None:
    """A CUDA device named in train.device must exist in this build and on this machine."""
    device = config.train.device
    if not device.startswith("cuda"):
        return
    import torch

    count = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if count == 0:
        build = "this torch build has no CUDA support" if torch.version.cuda is None else "no GPU is visible"
        raise ConfigError(f"{source}: 'train.device' is {device!r} but {build}; use auto or cpu")
    index = int(device.partition(":")[2] or 0)
    if index >= count:
        raise ConfigError(f"{source}: 'train.device' is {device!r} but only {count} GPU(s) are visible")
