"""The fit check (train.fit_check_complexes): how well the model ranks poses of complexes it trains on.

At the end of every train.fit_check_every-th epoch and of the last (every epoch by default) rank 0 scores the
docked poses of a fixed, seeded sample of training complexes in eval mode and records (epochs.jsonl, the epoch
line; docs/reports.md):

- ``fit_top1``: share of the sample's complexes with a near-native pose whose top-scored pose is near-native;
- ``fit_docking_top1``: the same of the docking score (lowest first) on the same complexes' scored poses: the
  bar a model that fits must clear;
- with data.target_column, ``fit_teacher_top1``: share of complexes whose top-scored pose is the teacher's first
  (a pose with the teacher's highest value), and ``fit_teacher_spearman``: the median over complexes (of two or
  more poses the teacher does not tie) of the Spearman rank correlation of the model's and the teacher's scores;
- ``fit_complexes`` and ``fit_check_s`` (its wall time).

A model that cannot reach the docking score's (or the teacher's) order on its own training complexes cannot
transfer it either: this makes "cannot fit" visible in every run.
"""

from __future__ import annotations

import time
from typing import Any, Optional

import numpy as np
import pandas as pd

from pecan.engine.evaluate import score_share
from pecan.runtime import tracing
from pecan.train.metrics import topk_success

FIT_FIELDS = ("fit_complexes", "fit_top1", "fit_docking_top1", "fit_teacher_top1", "fit_teacher_spearman")


def sample_rows(table, complexes: int, seed: int) -> np.ndarray:
    """Rows of the docked poses of up to ``complexes`` training complexes, chosen once by ``seed``."""
    docked = ~np.asarray(table.is_crystal, dtype=bool)
    codes = np.unique(table.complex_code[docked])
    chosen = np.random.default_rng(seed).permutation(codes)[:complexes]
    return np.flatnonzero(docked & np.isin(table.complex_code, chosen))


def _batches(dataset, rows: np.ndarray, batch_size: int):
    """The sample's batches, each traced as a batch like the loaders' (every pack gather lies in one)."""
    for start in range(0, len(rows), batch_size):
        indices = [int(i) for i in rows[start : start + batch_size]]
        with tracing.span("pecan.data", "batch", size=len(indices)):
            batch = dataset.__getitems__(indices)
        yield batch, None


def docking_top1(table, rows: np.ndarray) -> float:
    """Top-1 of the docking score (lowest first) over ``rows`` that have one; NaN when none has."""
    if table.docking_features is None:
        return float("nan")
    present = table.docking_features[rows, 2] == 0
    if not present.any():
        return float("nan")
    kept = rows[present]
    return topk_success(-table.docking_features[kept, 0], table.label[kept], table.complex_code[kept], 1)


def teacher_agreement(scores: np.ndarray, teacher: np.ndarray, complexes: np.ndarray) -> tuple[float, float]:
    """(share of complexes whose top-scored pose has the teacher's highest value, median per-complex Spearman of
    scores and teacher over complexes of two or more poses the teacher does not tie); NaN where undefined."""
    frame = pd.DataFrame({"score": scores, "teacher": teacher, "complex": complexes}).dropna()
    if frame.empty:
        return float("nan"), float("nan")
    agree, rhos = [], []
    for _, poses in frame.groupby("complex", sort=False):
        top = poses["score"].to_numpy().argmax()
        agree.append(poses["teacher"].iloc[top] == poses["teacher"].max())
        if len(poses) >= 2 and poses["teacher"].nunique() > 1 and poses["score"].nunique() > 1:
            rhos.append(poses["score"].rank().corr(poses["teacher"].rank()))
    return float(np.mean(agree)), float(np.median(rhos)) if rhos else float("nan")


class FitCheck:
    """The fit check of one run: its sample of rows fixed at construction; ``__call__(model)`` the figures."""

    def __init__(self, dataset, complexes: int, seed: int, batch_size: int, device, amp: str, every: int = 1) -> None:
        self.dataset, self.batch_size, self.device, self.amp, self.every = dataset, batch_size, device, amp, every
        self.rows = sample_rows(dataset.table, complexes, seed) if complexes > 0 else np.zeros(0, dtype=np.int64)

    @classmethod
    def from_config(cls, config, dataset, device) -> "FitCheck":
        """From train.fit_check_complexes (0: off), train.fit_check_every, train.seed, data.batch_size and
        train.amp."""
        train = config.train
        complexes = int(getattr(train, "fit_check_complexes", 0))
        every = int(getattr(train, "fit_check_every", 1))
        return cls(dataset, complexes, train.seed, config.data.batch_size, device, train.amp, every)

    def due(self, epoch: int, epochs: int) -> bool:
        """Whether the check runs after ``epoch`` (counted from 1) of ``epochs``: every ``every``-th and the last
        (a run's final record always has the fit; the epochs between carry no fit_* fields)."""
        return epoch % self.every == 0 or epoch >= epochs

    def __call__(self, model) -> dict[str, Any]:
        """The fit_* fields of an epoch record ({} when off)."""
        if not len(self.rows):
            return {}
        start = time.perf_counter()
        logits, ids = score_share(
            model, _batches(self.dataset, self.rows, self.batch_size), self.device, self.amp, False
        )
        scores, ids = logits.cpu().numpy().astype(np.float64), ids.cpu().numpy()
        table = self.dataset.table
        out: dict[str, Optional[float]] = {
            "fit_complexes": int(len(np.unique(table.complex_code[ids]))),
            "fit_top1": topk_success(scores, table.label[ids], table.complex_code[ids], 1),
            "fit_docking_top1": docking_top1(table, ids),
        }
        if table.target is not None:
            agree, rho = teacher_agreement(scores, table.target[ids], table.complex_code[ids])
            out.update(fit_teacher_top1=agree, fit_teacher_spearman=rho)
        out["fit_check_s"] = time.perf_counter() - start
        return out
