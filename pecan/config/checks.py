"""Value checks of a loaded config that types alone cannot express: ranges of every numeric key, device
names and availability, the model variant, and compatibility with the checkpoint a run resumes from.

Every error is a ConfigError naming the key (main_app exits 2 on it, before anything is written).
The checks read the config by attribute and import no part of ``pecan.config``, which calls them: the two
modules form no cycle.
"""

from __future__ import annotations

import dataclasses
import re
import signal
from typing import TYPE_CHECKING, Any, Optional

import model as registry
from pecan.runtime.errors import ConfigError

if TYPE_CHECKING:
    from pecan.config import Config

DEVICE_PATTERN = re.compile(r"auto|cpu|cuda(:\d+)?")


def signal_number(name: str) -> Optional[int]:
    """The number of a signal named like SIGUSR1 or USR1 (None for 'none'); ValueError when unknown or
    uncatchable."""
    if name.strip().lower() == "none":
        return None
    text = name.strip().upper()
    text = text if text.startswith("SIG") else f"SIG{text}"
    number = getattr(signal, text, None)
    if not isinstance(number, int) or text in ("SIGKILL", "SIGSTOP") or text.startswith("SIG_"):
        raise ValueError(f"unknown or uncatchable signal {name!r}")
    return int(number)


def stop_signal_ok(name: str) -> bool:
    """True when train.stop_signal names a catchable signal or none."""
    try:
        signal_number(name)
    except ValueError:
        return False
    return True


def _range_checks(config: Config) -> list[tuple[bool, str, str]]:
    """(ok, key, requirement) for every numeric key."""
    d, t, s = config.data, config.train, config.synthetic
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
        (t.epochs >= 1, "train.epochs", "must be >= 1"),
        (t.lr > 0, "train.lr", "must be > 0"),
        (t.weight_decay >= 0, "train.weight_decay", "must be >= 0"),
        (t.warmup_steps >= 0, "train.warmup_steps", "must be >= 0"),
        (t.grad_clip >= 0, "train.grad_clip", "must be >= 0"),
        (t.seed >= 0, "train.seed", "must be >= 0"),
        (t.max_steps_per_epoch >= 0, "train.max_steps_per_epoch", "must be >= 0"),
        (t.ranking_loss_weight >= 0, "train.ranking_loss_weight", "must be >= 0"),
        (t.ranking_rmsd_margin >= 0, "train.ranking_rmsd_margin", "must be >= 0"),
        (
            t.ranking_loss != "listwise" or t.ranking_target == "label",
            "train.ranking_target",
            "must be label under train.ranking_loss: listwise (its near-native set is the labels')",
        ),
        (
            bool(d.target_column) or (t.ranking_loss != "teacher_kl" and t.ranking_target != "teacher"),
            "train.ranking_loss",
            "teacher_kl and train.ranking_target: teacher need data.target_column (the teacher's scores)",
        ),
        (t.ranking_temperature > 0, "train.ranking_temperature", "must be > 0"),
        (0.0 <= t.target_mix <= 1.0, "train.target_mix", "must be in [0, 1]"),
        (t.fit_check_complexes >= 0, "train.fit_check_complexes", "must be >= 0 (0: off)"),
        (t.fit_check_every >= 1, "train.fit_check_every", "must be >= 1 (1: every epoch)"),
        (t.pos_weight == "auto" or t.pos_weight > 0, "train.pos_weight", "must be > 0 or auto"),
        (t.sync_every_minutes > 0, "train.sync_every_minutes", "must be > 0"),
        (t.progress_every_seconds >= 0, "train.progress_every_seconds", "must be >= 0"),
        (t.intra_op_threads >= 0, "train.intra_op_threads", "must be >= 0 (0: automatic)"),
        (t.tensorboard_every_steps >= 1, "train.tensorboard_every_steps", "must be >= 1"),
        (t.checkpoint_every_steps >= 0, "train.checkpoint_every_steps", "must be >= 0"),
        (t.checkpoint_every_minutes >= 0, "train.checkpoint_every_minutes", "must be >= 0"),
        (t.collective_timeout_s > 0, "train.collective_timeout_s", "must be > 0"),
        (t.lock_stale_minutes > 1, "train.lock_stale_minutes", "must be > 1 (the heartbeat is refreshed every minute)"),
        (
            stop_signal_ok(t.stop_signal),
            "train.stop_signal",
            "must be a signal name such as SIGUSR1, SIGUSR2 or SIGHUP (not SIGKILL/SIGSTOP), or none",
        ),
        (s.shards >= 1, "synthetic.shards", "must be >= 1"),
        (s.complexes_per_shard >= 1, "synthetic.complexes_per_shard", "must be >= 1"),
        (s.seed >= 0, "synthetic.seed", "must be >= 0"),
    ]


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
    try:
        name = registry.resolve_name(config.model.name, config.model.nn_type)
    except ValueError as err:
        return f"'{'model.nn_type' if config.model.nn_type is not None else 'model.name'}': {err}"
    if name not in registry.available():
        key = "model.nn_type" if config.model.nn_type is not None else "model.name"
        valid = ", ".join(registry.available())
        return f"'{key}': model {name!r} is not implemented in this release; available: {valid}"
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
    for problem in registry.problems(config.model, config):
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
