"""The figures of a scored set: ROC AUC, accuracy, loss, per-complex top-k success and first near-native rank.
Training's validation report, `pecan predict`, `pecan score` and the redocking benchmark all compute them
here."""

from __future__ import annotations

import numpy as np
import pandas as pd


def roc_auc(scores: np.ndarray, labels: np.ndarray) -> float:
    """Area under the ROC curve via the rank-sum statistic (ties get average ranks); NaN if one class."""
    labels = np.asarray(labels).astype(bool)
    positives, negatives = int(labels.sum()), int((~labels).sum())
    if positives == 0 or negatives == 0:
        return float("nan")
    ranks = pd.Series(np.asarray(scores, dtype=np.float64)).rank(method="average").to_numpy()
    return float((ranks[labels].sum() - positives * (positives + 1) / 2) / (positives * negatives))


def accuracy(logits: np.ndarray, labels: np.ndarray) -> float:
    """Fraction of samples whose thresholded prediction (logit > 0) matches the label."""
    if len(labels) == 0:
        return float("nan")
    return float(((np.asarray(logits) > 0) == np.asarray(labels).astype(bool)).mean())


def top1_success(logits: np.ndarray, labels: np.ndarray, complex_ids: np.ndarray) -> float:
    """Share of complexes (with at least one near-native pose) whose top-scored pose is near-native."""
    return topk_success(logits, labels, complex_ids, 1)


def first_native_rank(scores: np.ndarray, labels: np.ndarray, complex_ids: np.ndarray) -> pd.Series:
    """Per complex with a near-native pose: the rank (1 = best score) of its best-ranked near-native pose.
    Ties are broken by order of appearance, as scores.csv's pecan_rank column does."""
    frame = pd.DataFrame(
        {
            "score": np.asarray(scores, dtype=np.float64),
            "label": np.asarray(labels),
            "complex_id": np.asarray(complex_ids),
        }
    )
    frame["rank"] = frame.groupby("complex_id")["score"].rank(ascending=False, method="first")
    natives = frame[frame["label"] > 0]
    return natives.groupby("complex_id")["rank"].min().astype(int)


def topk_success(scores: np.ndarray, labels: np.ndarray, complex_ids: np.ndarray, k: int) -> float:
    """Share of complexes (with at least one near-native pose) with a near-native pose among the top ``k``."""
    ranks = first_native_rank(scores, labels, complex_ids)
    if ranks.empty:
        return float("nan")
    return float((ranks <= k).mean())


def bce_with_logits(logits: np.ndarray, labels: np.ndarray) -> float:
    """Mean binary cross-entropy from logits, numerically stable."""
    logits = np.asarray(logits, dtype=np.float64)
    labels = np.asarray(labels, dtype=np.float64)
    return float(np.mean(np.maximum(logits, 0) - logits * labels + np.log1p(np.exp(-np.abs(logits)))))
