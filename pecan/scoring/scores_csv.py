"""scores.csv, what `pecan predict` and `pecan score` write: its columns, and reading one back.

One row per scored pose: ``complex_id``, ``pose_id``, ``split``, ``pecan_score`` (the sigmoid of the model's
logit: higher = nearer native, not a calibrated probability, comparable only within one ligand), ``pecan_rank``
(1 = best within its complex), ``docking_score``, ``rmsd``, ``label`` (docs/scoring.md). A file written
before these names reads back under them: ``complex``, ``pose``,
``score`` and ``rank`` were the old names (``OLD_NAMES``).
"""

from __future__ import annotations

import math
import os

import pandas as pd

SCORE_COLUMNS = ("complex_id", "pose_id", "split", "pecan_score", "pecan_rank", "docking_score", "rmsd", "label")
SCREEN_COLUMNS = (*SCORE_COLUMNS, "pecan_clash", "receptor_distance")
"""What `pecan score` writes: scores.csv's columns, whether the pose clashes with the receptor (1 or 0) and its
closest ligand-receptor heavy-atom distance in A (``pecan.scoring.clashes``)."""
TEXT_COLUMNS = ("complex_id", "pose_id", "split")
OLD_NAMES = {"complex": "complex_id", "pose": "pose_id", "score": "pecan_score", "rank": "pecan_rank"}
"""Old column name -> today's, for scores tables written before the rename."""


def with_current_names(scores: pd.DataFrame) -> pd.DataFrame:
    """A scores table under today's column names (an old file's complex, pose, score and rank renamed)."""
    renames = {old: new for old, new in OLD_NAMES.items() if old in scores.columns and new not in scores.columns}
    return scores.rename(columns=renames)


def read_scores(path: str | os.PathLike) -> pd.DataFrame:
    """A scores CSV under today's column names, its ids as the text written (never numbers, never missing);
    empty numeric cells are NaN."""
    header = pd.read_csv(path, nrows=0).columns
    text = [c for c in header if OLD_NAMES.get(c, c) in TEXT_COLUMNS]
    scores = with_current_names(pd.read_csv(path, dtype={c: str for c in text}, keep_default_na=False))
    for column in scores.columns:
        if column not in TEXT_COLUMNS:
            scores[column] = pd.to_numeric(scores[column].replace("", math.nan), errors="coerce")
    return scores
