"""Metrics against hand-computed values."""

import math

import numpy as np
import pytest

from pecan.train import metrics


def test_auc_hand_computed_with_ties():
    scores = np.array([0.1, 0.4, 0.35, 0.8, 0.4])
    labels = np.array([0, 0, 1, 1, 1])
    # positive/negative pairs: (0.35 vs 0.1 win, vs 0.4 loss), (0.8 wins both), (0.4 vs 0.1 win, vs 0.4 tie)
    assert metrics.roc_auc(scores, labels) == pytest.approx((1 + 0 + 1 + 1 + 1 + 0.5) / 6)
    assert math.isnan(metrics.roc_auc(scores, np.ones(5)))


def test_accuracy_and_loss():
    logits = np.array([2.0, -1.0, 0.5, -3.0])
    labels = np.array([1, 1, 0, 0])
    assert metrics.accuracy(logits, labels) == 0.5
    expected = np.mean([np.log1p(np.exp(-2.0)), np.log1p(np.exp(1.0)), np.log1p(np.exp(0.5)), np.log1p(np.exp(-3.0))])
    assert metrics.bce_with_logits(logits, labels) == pytest.approx(expected)


def test_top1_counts_complexes_with_a_positive():
    logits = np.array([3.0, 1.0, 0.0, 5.0, 2.0, 9.0])
    labels = np.array([1, 0, 0, 0, 1, 0])
    complexes = np.array([0, 0, 1, 1, 1, 2])  # complex 2 has no near-native pose
    assert metrics.top1_success(logits, labels, complexes) == 0.5


def test_report_excludes_crystal_from_top1():
    logits = np.array([9.0, 1.0, 2.0])
    labels = np.array([1, 1, 0])
    complexes = np.zeros(3, int)
    out = metrics.classification_report(logits, labels, complexes, np.array([True, True, True]))
    assert out["val_top1"] == 1.0
    # Sample 0 is the crystal pose: among docked poses the top one (logit 2) is a decoy.
    out = metrics.classification_report(logits, labels, complexes, np.array([False, True, True]))
    assert out["val_top1"] == 0.0
