"""A consensus of the model and the docking score: `pecan score --docking-weight W` and `pecan predict
--docking-weight W` rank each ligand's poses by

    z(logit) + W * z(-docking score)

where ``z`` standardises a value over the poses of the ligand ranked together (mean 0, standard deviation 1; 0
for every pose where the value does not vary, e.g. a ligand with one pose). The model's ``pecan_score`` (a
probability) is unchanged; the consensus is written beside it as ``pecan_consensus`` and ``pecan_rank`` follows
it. ``W = 0`` is the model alone. A model that never reads the docking score (a structure-only student,
docs/distillation.md) and the docking program know different things about a pose, and the sum of their
standardised rankings ranks better than either on the corpus's held-out clusters (BENCHMARKS.md,
"Distillation"); a model that already reads the docking score gains less from it.
"""

from __future__ import annotations

import math
from typing import Optional

import numpy as np
import pandas as pd

from pecan.runtime.errors import ConfigError, DataError

COLUMN = "pecan_consensus"


def check_weight(weight: Optional[float], where: str) -> float:
    """``weight`` as a float >= 0 (None: 0); ConfigError naming ``where`` (the option) otherwise."""
    if weight is None:
        return 0.0
    value = float(weight)
    if not math.isfinite(value) or value < 0:
        raise ConfigError(f"{where} must be a finite number >= 0 (0: the model alone), got {weight!r}")
    return value


def standardised(values: np.ndarray) -> np.ndarray:
    """``values`` z-scored (population standard deviation); zeros where they do not vary."""
    values = np.asarray(values, dtype=np.float64)
    spread = values.std()
    if not len(values) or not np.isfinite(spread) or spread <= 0:
        return np.zeros(len(values))
    return (values - values.mean()) / spread


def consensus(logits: np.ndarray, docking_scores: np.ndarray, weight: float) -> np.ndarray:
    """One ligand's poses: ``z(logits) + weight * z(-docking_scores)`` (lower docking score = better)."""
    docking = np.asarray(docking_scores, dtype=np.float64)
    if weight and not np.isfinite(docking).all():
        raise ValueError("every pose needs a finite docking score for the consensus")
    model = standardised(logits)
    return model if not weight else model + weight * standardised(-docking)


def consensus_column(scores: pd.DataFrame, weight: float) -> np.ndarray:
    """``consensus`` of each complex's rows of ``scores`` (columns complex_id, logit, docking_score), in row
    order."""
    out = np.empty(len(scores))
    logits = scores["logit"].to_numpy(dtype=np.float64)
    docking = scores["docking_score"].to_numpy(dtype=np.float64)
    for complex_id, rows in scores.groupby("complex_id", sort=False).indices.items():
        if weight and not np.isfinite(docking[rows]).all():
            raise DataError(
                f"the consensus (docking weight {weight:g}) needs a finite docking score for every pose: "
                f"{int((~np.isfinite(docking[rows])).sum())} of ligand {complex_id}'s {len(rows)} poses have none"
            )
        out[rows] = consensus(logits[rows], docking[rows], weight)
    return out
