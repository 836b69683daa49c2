"""Classification metrics: loss, accuracy, ROC AUC and per-complex top-1 success."""
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
    frame = pd.DataFrame({"score": logits, "label": labels, "complex": complex_ids})
    frame = frame[frame.groupby("complex")["label"].transform("max") > 0]
    if frame.empty:
        return float("nan")
    best = frame.loc[frame.groupby("complex")["score"].idxmax()]
    return float(best["label"].mean())


def bce_with_logits(logits: np.ndarray, labels: np.ndarray) -> float:
    """Mean binary cross-entropy from logits, numerically stable."""
    logits = np.asarray(logits, dtype=np.float64)
    labels = np.asarray(labels, dtype=np.float64)
    return float(np.mean(np.maximum(logits, 0) - logits * labels + np.log1p(np.exp(-np.abs(logits)))))


def classification_report(logits: np.ndarray, labels: np.ndarray, complex_ids: np.ndarray,
                          docked: np.ndarray) -> dict[str, float]:
    """val_loss, val_auc, val_acc over all samples; val_top1 over docked poses only (crystal excluded)."""
    docked = np.asarray(docked, dtype=bool)
    return {"val_loss": bce_with_logits(logits, labels), "val_auc": roc_auc(logits, labels),
            "val_acc": accuracy(logits, labels),
            "val_top1": top1_success(logits[docked], labels[docked], complex_ids[docked])}


def resolve_pos_weight(setting: float | str, labels: np.ndarray) -> float:
    """train.pos_weight as a number: 'auto' is negatives/positives among the training labels."""
    if setting != "auto":
        return float(setting)
    labels = np.asarray(labels)
    positives = int((labels > 0).sum())
    if positives == 0:
        raise ValueError("train.pos_weight: auto needs positive training samples; there are none")
    return (len(labels) - positives) / positives
