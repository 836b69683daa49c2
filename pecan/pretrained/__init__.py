"""The shipped pretrained model: `pecan score` uses it when no checkpoint is given.

``corpus_student.pt`` is a scoring-only checkpoint (model weights, model config, pinned sample settings, the
training-data record; no optimizer, scheduler or RNG state), trained by studies/corpus/ship.py on the
public redocked corpus of studies/corpus; ``shipped.json`` names it and the weight of its consensus with the
docking score (``pecan.scoring.consensus``); ``MODEL_CARD.md`` beside it says on what, with which teacher,
exclusions and figures, and holds the checkpoint's config as a JSON block that a test compares with the
checkpoint. This package holds the look-ups `pecan score` makes; building, slimming and carding the model is
release tooling, outside the package (``release/``).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
CHECKPOINT = HERE / "corpus_student.pt"
CARD = HERE / "MODEL_CARD.md"
SHIPPED = HERE / "shipped.json"
"""What `pecan score` uses without a checkpoint: ``{"checkpoints": [file names here], "docking_weight": W}`` (several
checkpoints score as their ensemble; W is the consensus weight of ``pecan.scoring.consensus``). Required: without
it the shipped checkpoint would rank otherwise than its card says."""


def shipped() -> dict[str, Any]:
    """The shipped model's description (``SHIPPED``); FileNotFoundError or ValueError naming the file when it is
    missing or malformed."""
    if not SHIPPED.exists():
        raise FileNotFoundError(
            f"no shipped model description at {SHIPPED}: give a checkpoint (RUN/checkpoints/best.pt)"
        )
    try:
        value = json.loads(SHIPPED.read_text())
        names = [str(name) for name in value["checkpoints"]]
        weight = float(value.get("docking_weight", 0.0))
    except (ValueError, KeyError, TypeError) as err:
        raise ValueError(f"{SHIPPED}: not a shipped-model description ({err})") from err
    # pecan.scoring.consensus.check_weight's rule, restated: this floor sits below pecan.scoring
    if not names or not math.isfinite(weight) or weight < 0:
        raise ValueError(f"{SHIPPED}: needs one or more checkpoints and a docking_weight that is a finite number >= 0")
    return {**value, "checkpoints": names, "docking_weight": weight}


def default_checkpoints() -> tuple[Path, ...]:
    """The shipped checkpoint(s); FileNotFoundError naming one this installation lacks."""
    paths = tuple(HERE / name for name in shipped()["checkpoints"])
    for path in paths:
        if not path.exists():
            raise FileNotFoundError(f"no shipped model at {path}: give a checkpoint (RUN/checkpoints/best.pt)")
    return paths


def default_checkpoint() -> Path:
    """The first shipped checkpoint (the only one unless the shipped model is an ensemble)."""
    return default_checkpoints()[0]


def default_docking_weight() -> float:
    """The shipped model's consensus weight with the docking score (0: the model alone)."""
    return float(shipped()["docking_weight"])
