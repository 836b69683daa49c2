"""Training's validation metrics and the choice of the best checkpoint (train.select_on). The figures
themselves (loss, accuracy, ROC AUC, per-complex top-k success and first near-native rank) are
``pecan.engine.metrics``, shared with scoring, and re-exported here."""

from __future__ import annotations

import logging

import numpy as np

from pecan.engine.metrics import accuracy, bce_with_logits, first_native_rank, roc_auc, top1_success, topk_success  # noqa: F401

log = logging.getLogger(__name__)


def classification_report(
    logits: np.ndarray, labels: np.ndarray, complex_ids: np.ndarray, docked: np.ndarray
) -> dict[str, float]:
    """val_auc, val_acc, val_top1 over docked poses only: a crystal pose is trivially positive and would
    inflate them. val_loss (the training objective) and the *_with_crystal figures count every sample."""
    logits, labels, complex_ids = np.asarray(logits), np.asarray(labels), np.asarray(complex_ids)
    docked = np.asarray(docked, dtype=bool)
    return {
        "val_loss": bce_with_logits(logits, labels),
        "val_auc": roc_auc(logits[docked], labels[docked]),
        "val_acc": accuracy(logits[docked], labels[docked]),
        "val_top1": top1_success(logits[docked], labels[docked], complex_ids[docked]),
        "val_auc_with_crystal": roc_auc(logits, labels),
        "val_acc_with_crystal": accuracy(logits, labels),
        "val_docked": int(docked.sum()),
    }


SELECT_ON = ("val_auc", "val_loss")
"""train.select_on choices; higher AUC is better, lower loss is better."""


class BestSelector:
    """Decides which epoch's checkpoint is best.pt: by train.select_on, falling back to val_loss when the
    chosen AUC is undefined (one-class validation), so every completed epoch can give a best."""

    def __init__(self, select_on: str = "val_auc") -> None:
        self.select_on = select_on
        self.best: dict[str, float] = {}
        self.criterion: str | None = None

    def _criterion(self, metrics: dict[str, float]) -> str:
        """The key compared this epoch: select_on while it is defined now and for the best so far."""
        if self.select_on == "val_loss":
            return "val_loss"
        defined = [values.get("val_auc", float("nan")) for values in (metrics, self.best or metrics)]
        return "val_auc" if all(np.isfinite(defined)) else "val_loss"

    def update(self, metrics: dict[str, float]) -> bool:
        """Whether ``metrics`` beats the best so far (then it becomes the best)."""
        criterion = self._criterion(metrics)
        if criterion != self.criterion and criterion != self.select_on:
            log.info("best.pt: %s undefined (one-class validation?), choosing by %s", self.select_on, criterion)
        self.criterion = criterion
        value = float(metrics.get(criterion, float("nan")))
        best = self.best.get(criterion, float("nan"))
        if not self.best:
            improved = True
        elif not np.isfinite(value):
            improved = False
        else:
            improved = not np.isfinite(best) or (value > best if criterion == "val_auc" else value < best)
        if improved:
            self.best = {key: float(metrics[key]) for key in SELECT_ON if key in metrics}
        return improved

    def state(self) -> dict:
        """Checkpoint form (weights_only-safe)."""
        return {"select_on": self.select_on, "best": dict(self.best), "criterion": self.criterion or ""}

    def load(self, state: dict | None, legacy_best_auc: float | None = None) -> None:
        """Restore ``state``; a checkpoint without one carries only its best validation AUC."""
        if state:
            self.best, self.criterion = dict(state.get("best", {})), state.get("criterion") or None
        elif legacy_best_auc is not None and np.isfinite(legacy_best_auc):
            self.best = {"val_auc": float(legacy_best_auc)}


def resolve_pos_weight(setting: float | str, labels: np.ndarray) -> float:
    """train.pos_weight as a number: 'auto' is negatives/positives among the training labels."""
    if setting != "auto":
        return float(setting)
    labels = np.asarray(labels)
    positives = int((labels > 0).sum())
    if positives == 0:
        raise ValueError("train.pos_weight: auto needs positive training samples; there are none")
    return (len(labels) - positives) / positives
