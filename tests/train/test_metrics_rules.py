"""Metric rules at their edges, against hand-computed values."""

import math

import numpy as np
import pytest

from pecan.train import metrics


def test_logit_exactly_zero_predicts_decoy():
    assert metrics.accuracy(np.array([0.0]), np.array([0])) == 1.0
    assert metrics.accuracy(np.array([0.0]), np.array([1])) == 0.0
    assert metrics.accuracy(np.array([1e-6, -1e-6]), np.array([1, 0])) == 1.0


def test_empty_and_one_class_inputs_give_nan():
    assert math.isnan(metrics.accuracy(np.array([]), np.array([])))
    assert math.isnan(metrics.roc_auc(np.array([0.3, 0.1]), np.array([0, 0])))
    assert math.isnan(metrics.roc_auc(np.array([0.3, 0.1]), np.array([1, 1])))
    # No complex has a near-native pose: top-1 is undefined, not 0.
    assert math.isnan(metrics.top1_success(np.array([1.0, 2.0]), np.array([0, 0]), np.array([0, 1])))


def test_auc_perfect_reversed_and_all_tied():
    labels = np.array([0, 0, 1, 1])
    assert metrics.roc_auc(np.array([1.0, 2.0, 3.0, 4.0]), labels) == 1.0
    assert metrics.roc_auc(np.array([4.0, 3.0, 2.0, 1.0]), labels) == 0.0
    assert metrics.roc_auc(np.full(4, 0.5), labels) == 0.5
    # A single negative is enough for a defined AUC.
    assert metrics.roc_auc(np.array([1.0, 2.0, 0.5]), np.array([0, 1, 1])) == 0.5
    # 1 positive vs 3 negatives, beats exactly two of them.
    assert metrics.roc_auc(np.array([1.0, 5.0, 2.0, 3.0]), np.array([0, 0, 0, 1])) == pytest.approx(2 / 3)


def test_bce_is_stable_for_large_logits():
    logits = np.array([1000.0, -1000.0, 1000.0])
    labels = np.array([1, 0, 0])
    # log(1 + e^-1000) ~ 0 twice, log(1 + e^1000) = 1000 once.
    assert metrics.bce_with_logits(logits, labels) == pytest.approx(1000.0 / 3)
    assert metrics.bce_with_logits(np.array([0.0]), np.array([1])) == pytest.approx(math.log(2))


def test_top1_picks_the_highest_score_per_complex():
    # Complex 7: best is pose 2 (label 1); complex 3: best is pose 3 (label 0); complex 5: one positive pose.
    logits = np.array([0.1, -2.0, 0.9, 4.0, 3.0, -1.0])
    labels = np.array([0, 1, 1, 0, 1, 1])
    complexes = np.array([7, 7, 7, 3, 3, 5])
    assert metrics.top1_success(logits, labels, complexes) == pytest.approx(2 / 3)


def test_report_fields_are_the_named_metrics():
    logits = np.array([2.0, -1.0, 0.5, -3.0, 4.0])
    labels = np.array([1, 1, 0, 0, 1])
    complexes = np.array([0, 0, 1, 1, 1])
    docked = np.array([True, True, True, True, False])
    out = metrics.classification_report(logits, labels, complexes, docked)
    assert out["val_loss"] == pytest.approx(metrics.bce_with_logits(logits, labels))
    # Docked poses only (the crystal, logit 4, excluded): predictions 1 0 1 0 vs labels 1 1 0 0.
    assert out["val_acc"] == 0.5 and out["val_docked"] == 4
    # positives {2, -1} vs negatives {0.5, -3}: 2 beats both, -1 beats -3: 3 of 4 pairs.
    assert out["val_auc"] == pytest.approx(3 / 4)
    # With the crystal: positives {2, -1, 4} vs negatives {0.5, -3}: wins 2+1+2 of 6 pairs.
    assert out["val_acc_with_crystal"] == 0.6
    assert out["val_auc_with_crystal"] == pytest.approx(5 / 6)
    # Docked only: complex 0 top pose (2.0) is near-native; complex 1 has no docked positive left.
    assert out["val_top1"] == 1.0


def test_report_takes_a_zero_one_docked_mask():
    """A 0/1 mask (1 - the index's is_crystal column) selects rows; it must not act as row numbers."""
    logits = np.array([9.0, 1.0, 2.0])
    labels = np.array([1, 1, 0])
    complexes = np.zeros(3, int)
    out = metrics.classification_report(logits, labels, complexes, np.array([0, 1, 1]))
    assert out["val_top1"] == 0.0  # docked poses 1 and 2: the top one (2.0) is a decoy
    out = metrics.classification_report(logits, labels, complexes, [1, 1, 0])
    assert out["val_top1"] == 1.0
