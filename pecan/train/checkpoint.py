"""Atomic checkpoints (temp file in the destination directory, then os.replace) and resume.

The checkpoint's contents are defined by ``Trainer.state_dict()`` / ``load_state_dict()``; this module
writes and reads them, and checks before a run starts that the checkpoint it resumes from fits its config.
"""

from __future__ import annotations

import io
import logging
import os
import random
import re
from pathlib import Path
from typing import Any, Optional

import numpy as np
import torch

import model as registry
from pecan.runtime.fileio import atomic_write

log = logging.getLogger(__name__)

WRAPPER_PREFIXES = ("module.", "_orig_mod.")


def clean_state_dict(state: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Drop DDP ('module.') and torch.compile ('_orig_mod.') prefixes so checkpoints load anywhere."""
    out = {}
    for key, value in state.items():
        changed = True
        while changed:
            changed = False
            for prefix in WRAPPER_PREFIXES:
                if key.startswith(prefix):
                    key, changed = key[len(prefix) :], True
        out[key] = value
    return out


def rng_state() -> dict[str, Any]:
    """Python, NumPy and torch RNG states in a weights_only-loadable form."""
    numpy_state = np.random.get_state()
    state = {
        "python": list(random.getstate()[1]),
        "python_version": random.getstate()[0],
        "python_gauss": random.getstate()[2],
        "numpy_keys": torch.from_numpy(numpy_state[1].astype(np.int64)),
        "numpy_pos": int(numpy_state[2]),
        "numpy_gauss": [int(numpy_state[3]), float(numpy_state[4])],
        "torch": torch.get_rng_state(),
    }
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    """Restore what ``rng_state`` captured."""
    random.setstate((state["python_version"], tuple(state["python"]), state["python_gauss"]))
    np.random.set_state(
        ("MT19937", state["numpy_keys"].numpy().astype(np.uint32), state["numpy_pos"], *state["numpy_gauss"])
    )
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


WRITE_CHUNK = 1 << 22


def _write_bytes(out, data: memoryview) -> None:
    """Write in chunks (an ENOSPC surfaces as an OSError naming the errno, not torch's 'unexpected pos')."""
    for start in range(0, len(data), WRITE_CHUNK):
        out.write(data[start : start + WRITE_CHUNK])


def save_checkpoint(path: str | os.PathLike, payload: dict[str, Any]) -> Path:
    """Serialise ``payload`` with torch.save, write it to a temp file beside ``path``, fsync, rename into
    place; a failed write removes the temp file and raises StorageError naming the path."""
    path = Path(path)
    payload_bytes = io.BytesIO()
    torch.save(payload, payload_bytes)
    with atomic_write(path, "wb") as out:
        _write_bytes(out, payload_bytes.getbuffer())
    return path


def _reason(err: BaseException) -> str:
    """Why a checkpoint could not be read, in one line. torch's own text for a file holding more than
    tensors suggests loading it with weights_only=False, which would run code from the file: never repeat it."""
    text = str(err)
    if "weights_only" in text or "Weights only load failed" in text:
        found = re.search(r"WeightsUnpickler error: ([^\n]*)", text)
        detail = f": {found.group(1).strip()}" if found else ""
        return f"it holds objects other than tensors and plain containers{detail}"
    return (text.strip().splitlines() or [type(err).__name__])[0][:300]


def load_checkpoint(path: str | os.PathLike, map_location: Any = "cpu") -> dict[str, Any]:
    """Load safely (weights_only=True: tensors and plain containers only); a damaged file is a ValueError
    naming it."""
    try:
        state = torch.load(path, map_location=map_location, weights_only=True)
    except FileNotFoundError as err:
        raise FileNotFoundError(f"checkpoint not found: {path}") from err
    except Exception as err:  # torch raises several types for truncated or foreign files
        raise ValueError(f"cannot load checkpoint {path}: damaged or not a PECAN checkpoint ({_reason(err)})") from None
    if not isinstance(state, dict):
        raise ValueError(f"cannot load checkpoint {path}: damaged or not a PECAN checkpoint (no state dict)")
    return state


# A run directory's checkpoints that ``resume: auto`` considers; on equal mtime the earlier name wins.
RESUME_CANDIDATES = ("last.pt", "mid_epoch.pt", "best.pt")


def newest_intact(
    out_dir: str | os.PathLike, warn: bool = True, map_location: Any = "cpu"
) -> tuple[Optional[Path], Optional[dict[str, Any]]]:
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
            state = load_checkpoint(path, map_location)
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
) -> tuple[Optional[Path], Optional[dict[str, Any]]]:
    """train.resume's checkpoint and its state: auto -> the newest intact one of out_dir (see
    ``newest_intact``), never -> (None, None), a path -> that file (ValueError naming it when damaged)."""
    if resume == "auto":
        return newest_intact(out_dir, warn, map_location)
    path = resume_path(resume, out_dir)
    return (path, load_checkpoint(path, map_location)) if path is not None else (None, None)


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


def warn_changed_settings(state: dict[str, Any], config, path: Path) -> list[str]:
    """Log a warning naming each setting (and both values) that differs between the checkpoint's config
    and this run's; returns those lines."""
    if state.get("config_digest") == config.digest():
        return []
    saved = state.get("config")
    if not isinstance(saved, dict):
        log.warning(
            "resuming from %s written under a different config (digest %s, now %s; the checkpoint "
            "predates stored configs, so the keys cannot be named)",
            path,
            state.get("config_digest"),
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
    saved = state.get("config")
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
