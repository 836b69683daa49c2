"""A teacher's per-pose score as a column of the benchmark's index (run.py --teacher).

The column (named ``teacher``) is what ``data.target_column: teacher`` reads: the teacher's probability for
every docked pose, empty for the crystal pose (the teacher never scored it; docs/distillation.md). A docked pose
without a teacher score is an error naming it, as a training CSV with a missing cell would be.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

COLUMN = "teacher"


def with_teacher(index: pd.DataFrame, peer_scores: Path, score_column: str) -> pd.DataFrame:
    """``index`` with the ``teacher`` column: ``score_column`` of ``peer_scores`` for each (complex_id, pose_id)."""
    table = pd.read_csv(peer_scores, dtype={"complex_id": str, "pose_id": str}, keep_default_na=False)
    if score_column not in table.columns:
        raise SystemExit(f"error: {peer_scores} has no column {score_column!r} (--teacher)")
    scores = dict(zip(zip(table["complex_id"], table["pose_id"]), pd.to_numeric(table[score_column])))
    crystal = pd.to_numeric(index["is_crystal"], errors="coerce").fillna(0).to_numpy() != 0
    values = np.array([scores.get(key, np.nan) for key in zip(index["complex_id"], index["pose_id"])], dtype=float)
    lacking = ~crystal & np.isnan(values)
    if lacking.any():
        first = index[lacking].iloc[0]
        raise SystemExit(
            f"error: {int(lacking.sum())} docked pose(s) have no {score_column} in {peer_scores}, "
            f"e.g. {first['complex_id']}/{first['pose_id']}"
        )
    values[crystal] = np.nan
    return index.assign(**{COLUMN: values})
