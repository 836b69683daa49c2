"""Which checkpoint a run resumes from, and whether it fits the run's config.

The checkpoint's contents are defined by ``Trainer.state_dict()`` / ``load_state_dict()``; the file I/O is
``pecan.engine.checkpoint`` (re-exported here for the training code); this module chooses the checkpoint
to resume from and checks before a run starts that it fits the config.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any, Optional

import model as registry
from pecan.engine.checkpoint import clean_state_dict, load_checkpoint, rng_state, save_checkpoint, set_rng_state  # noqa: F401
from pecan.engine.state import CheckpointState

log = logging.getLogger(__name__)

# A run directory's checkpoints that ``resume: auto`` considers; on equal mtime the earlier name wins.
RESUME_CANDIDATES = ("last.pt", "mid_epoch.pt", "best.pt")


def newest_intact(
    out_dir: str | os.PathLike, warn: bool = True, map_location: Any = "cpu"
) -> tuple[Optional[Path], Optional[CheckpointState]]:
    """The newest checkpoint of out_dir/checkpoints that loads (see the order below); a damaged one is
    named in a warning and the next is tried. (None, None) without checkpoints; ValueError when every one
    is damaged."""
    directory = Path(out_dir) / "checkpoints"
    present = [directory / name for name in RESUME_CANDIDATES if (directory / name).is_file()]
    # last.pt or mid_epoch.pt, whichever was written later; best.pt (never ahead of last.pt) only as a fallback.
    present.sort(key=lambda p: (p.name == "best.pt", -p.stat().st_mtime_ns))
    damaged = []
    for path in present:
        try:
            state = CheckpointState.load(path, map_location)
        except ValueError as err:
            damaged.append(str(err))
            if warn:
                log.warning("%s; trying an older checkpoint", err)
            continue
        if damaged and warn:
            log.warning("resuming from %s instead of the damaged newer checkpoint", path)
        return path, state
    if damaged:
        raise ValueError(
            "every checkpoint of the run is damaged (" + "; ".join(damaged) + "); remove them to "
            "start over, or set train.resume to a good checkpoint"
        )
    return None, None


def resume_path(resume: str, out_dir: str | os.PathLike) -> Optional[Path]:
    """Which checkpoint to resume from: 'auto' -> out_dir's last.pt if any, 'never' -> None, else the path."""
    if resume == "never":
        return None
    if resume == "auto":
        candidate = Path(out_dir) / "checkpoints" / "last.pt"
        return candidate if candidate.exists() else None
    path = Path(resume)
    if not path.exists():
        raise FileNotFoundError(f"train.resume: checkpoint {path} does not exist")
    return path


def choose_resume(
    resume: str, out_dir: str | os.PathLike, warn: bool = True, map_location: Any = "cpu"
) -> tuple[Optional[Path], Optional[CheckpointState]]:
    """train.resume's checkpoint and its state: auto -> the newest intact one of out_dir (see
    ``newest_intact``), never -> (None, None), a path -> that file (ValueError naming it when damaged)."""
    if resume == "auto":
        return newest_intact(out_dir, warn, map_location)
    path = resume_path(resume, out_dir)
    return (path, CheckpointState.load(path, map_location)) if path is not None else (None, None)


def config_differences(saved: dict[str, Any], current: dict[str, Any], section: str) -> list[str]:
    """'section.key: checkpoint A, config B' for every key of ``section`` that differs (a model key its variant
    no longer has is not a difference: loading the config ignores it too)."""
    old, new = saved.get(section) or {}, current.get(section) or {}
    if section == "model" and isinstance(old, dict):
        old = registry.without_removed_keys(old)
    return [
        f"{section}.{key}: checkpoint {old.get(key)!r}, config {new.get(key)!r}"
        for key in sorted(set(old) | set(new))
        if old.get(key) != new.get(key)
    ]


def changed_settings(saved: dict[str, Any], current: dict[str, Any]) -> list[str]:
    """'section.key: checkpoint A, config B' for every key of every section that differs."""
    return [
        line
        for section in sorted(set(saved) | set(current))
        if isinstance(saved.get(section, {}), dict)
        for line in config_differences(saved, current, section)
    ]


def warn_changed_settings(state: CheckpointState, config, path: Path) -> list[str]:
    """Log a warning naming each setting (and both values) that differs between the checkpoint's config
    and this run's; returns those lines."""
    if state.config_digest == config.digest():
        return []
    saved = state.config
    if not isinstance(saved, dict):
        log.warning(
            "resuming from %s written under a different config (digest %s, now %s; the checkpoint "
            "predates stored configs, so the keys cannot be named)",
            path,
            state.config_digest,
            config.digest(),
        )
        return []
    changes = changed_settings(saved, config.to_dict())
    if changes:
        log.warning("resuming from %s with changed settings: %s", path, "; ".join(changes))
    return changes


def check_resume_compatible(config) -> Optional[Path]:
    """Before anything is built or written: the checkpoint train.resume selects must have been written
    under the same model config; raises ConfigError listing the keys that differ. Returns its path."""
    from pecan.config import ConfigError

    try:
        path, state = choose_resume(config.train.resume, config.train.out_dir)
    except FileNotFoundError as err:
        raise ConfigError(str(err)) from err
    except ValueError as err:
        raise ConfigError(f"train.resume: {err}") from err
    if path is None:
        return None
    saved = state.config
    if not isinstance(saved, dict):
        return path  # written before configs were stored; load_state_dict still checks the shapes
    differences = config_differences(saved, config.to_dict(), "model")
    if differences:
        raise ConfigError(
            f"train.resume: checkpoint {path} was written with a different model config "
            f"({'; '.join(differences)}); restore those keys, or set train.resume: never "
            f"with a new train.out_dir"
        )
    return path
