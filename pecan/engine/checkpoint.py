"""Checkpoint files: written atomically (torch.save into a temp file beside the destination, then
os.replace) and read back safely (weights_only: tensors and plain containers only), the state dict without
its DDP and torch.compile wrappers, and the RNG states a resumed run restores. Training and scoring both
read checkpoints through here; what a checkpoint holds is ``pecan.engine.state.CheckpointState``.
"""

from __future__ import annotations

import io
import os
import random
import re
from pathlib import Path
from typing import Any

import numpy as np
import torch

from pecan.runtime.fileio import atomic_write

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
