"""A trained checkpoint made fit to ship: what scoring reads only, its run config's paths made relative to the
build's repository root (so a shipped file names no build machine's folders)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pecan.engine.state import CheckpointState

# The run-config keys that hold paths: a shipped checkpoint names them relative to the build's repository root.
PATH_KEYS = {
    "data": ("data_dir", "train_csvs", "val_csvs", "test_csvs", "train_fns", "val_fns", "test_fns")
    + ("cache_dir", "index_dir", "stage_dir"),
    "train": ("out_dir", "sync_dir", "resume", "init_from"),
    "trace": ("dir",),
}


def _relative(value: Any, root: Path) -> Any:
    if isinstance(value, list):
        return [_relative(item, root) for item in value]
    if isinstance(value, str) and Path(value).is_absolute():
        try:
            return Path(value).relative_to(root).as_posix()
        except ValueError:
            return value
    return value


def portable_config(config: dict | None, root: Path) -> dict | None:
    """The run config with every absolute path under ``root`` made relative to it, so a shipped checkpoint
    names no build machine's folders (a path outside ``root`` is kept as given)."""
    if not isinstance(config, dict):
        return config
    out = {section: dict(values) if isinstance(values, dict) else values for section, values in config.items()}
    for section, keys in PATH_KEYS.items():
        if isinstance(out.get(section), dict):
            for key in keys:
                if key in out[section]:
                    out[section][key] = _relative(out[section][key], root)
    return out


def slim_checkpoint(source: Path, out: Path, root: Path | None = None) -> Path:
    """A copy of ``source`` with what scoring reads only (``CheckpointState.for_scoring``), written atomically;
    with ``root``, its run config's paths under ``root`` made relative to it (``portable_config``)."""
    state = CheckpointState.load(source)
    if root is not None:
        state.config = portable_config(state.config, Path(root).resolve())
    out.parent.mkdir(parents=True, exist_ok=True)
    return state.for_scoring().save(out)
