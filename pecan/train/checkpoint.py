"""Atomic checkpoints (temp file in the destination directory, then os.replace) and resume."""
from __future__ import annotations

import logging
import os
import random
from pathlib import Path
from typing import Any, Optional

import numpy as np
import torch

from pecan.fileio import atomic_write

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
                    key, changed = key[len(prefix):], True
        out[key] = value
    return out


def rng_state() -> dict[str, Any]:
    """Python, NumPy and torch RNG states in a weights_only-loadable form."""
    numpy_state = np.random.get_state()
    state = {"python": list(random.getstate()[1]), "python_version": random.getstate()[0],
             "python_gauss": random.getstate()[2],
             "numpy_keys": torch.from_numpy(numpy_state[1].astype(np.int64)), "numpy_pos": int(numpy_state[2]),
             "numpy_gauss": [int(numpy_state[3]), float(numpy_state[4])],
             "torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    """Restore what ``rng_state`` captured."""
    random.setstate((state["python_version"], tuple(state["python"]), state["python_gauss"]))
    np.random.set_state(("MT19937", state["numpy_keys"].numpy().astype(np.uint32), state["numpy_pos"],
                        *state["numpy_gauss"]))
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def save_checkpoint(path: str | os.PathLike, payload: dict[str, Any]) -> Path:
    """Write ``payload`` with torch.save to a temp file beside ``path`` and rename it into place."""
    path = Path(path)
    with atomic_write(path, "wb") as out:
        torch.save(payload, out)
    return path


def load_checkpoint(path: str | os.PathLike, map_location: Any = "cpu") -> dict[str, Any]:
    """Load safely (weights_only=True: tensors and plain containers only)."""
    try:
        return torch.load(path, map_location=map_location, weights_only=True)
    except FileNotFoundError as err:
        raise FileNotFoundError(f"checkpoint not found: {path}") from err
    except Exception as err:  # torch raises several types for truncated or foreign files
        raise ValueError(f"cannot load checkpoint {path}: {err}") from err


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
