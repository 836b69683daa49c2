"""Benchmark statistics: per-complex top-k of a score, the ceiling, paired bootstrap intervals, AUCs."""

import numpy as np
import pandas as pd
import pytest

from pecan.redock.ranking import bootstrap_interval, complex_table, summarize, top_k_hits

# complex a: the model's best pose (0.9) is near-native, the docking score's best (-9) is not.
# complex b: both rank a wrong pose first; the near-native pose is second for both.
# complex c: no near-native pose at all (counts against every ranker and the ceiling).
SCORES = pd.DataFrame(
    {
        "complex_id": ["a", "a", "a", "b", "b", "b", "b", "c", "c"],
        "pecan_score": [0.9, 0.1, 0.5, 0.8, 0.7, 0.2, 0.1, 0.3, 0.4],
        "docking_score": [-7.0, -9.0, -8.0, -10.0, -9.5, -6.0, -5.0, -8.0, -7.0],
        "label": [1, 0, 0, 0, 1, 0, 0, 0, 0],
    }
)


def test_top_k_and_ceiling_by_hand():
    table = complex_table(SCORES)
    assert table["model_top1"].tolist() == [1, 0, 0]
    assert table["docking_top1"].tolist() == [0, 0, 0]
    assert table["model_top3"].tolist() == [1, 1, 0]
    assert table["docking_top3"].tolist() == [1, 1, 0]
    assert table["ceiling"].tolist() == [1, 1, 0]
    assert top_k_hits(SCORES, "docking_score", 2, higher_is_better=False).tolist() == [0, 1, 0]


def test_summary_rates_intervals_and_aucs():
    result = summarize(SCORES, n_boot=500, seed=1)
    assert result["complexes"] == 3 and result["poses"] == 9 and result["near_native_poses"] == 2
    assert result["model_top1"]["hits"] == 1 and result["model_top1"]["rate"] == pytest.approx(1 / 3)
    low, high = result["model_top1"]["ci95"]
    assert 0.0 <= low <= 1 / 3 <= high <= 1.0
    assert result["top1_difference"]["mean"] == pytest.approx(1 / 3)
    # pose-level AUC: the two near-native poses (0.9, 0.7) against the 7 others
    negatives = [0.1, 0.5, 0.8, 0.2, 0.1, 0.3, 0.4]
    expected = (sum(0.9 > n for n in negatives) + sum(0.7 > n for n in negatives)) / 14
    assert result["model_auc"] == pytest.approx(expected)


def test_bootstrap_interval_of_a_constant_is_the_constant():
    draws = np.random.default_rng(0).integers(0, 4, size=(200, 4))
    assert bootstrap_interval(np.ones(4), draws) == [1.0, 1.0]
    low, high = bootstrap_interval(np.array([0, 0, 1, 1]), draws)
    assert 0.0 <= low < 0.5 < high <= 1.0


def test_a_peer_ranker_gets_its_rates_auc_and_paired_differences():
    scores = SCORES.assign(gnina=[0.1, 0.9, 0.2, 0.1, 0.8, 0.3, 0.2, 0.5, 0.6])  # gnina: wrong on a, right on b
    table = complex_table(scores, peers=("gnina",))
    assert table["gnina_top1"].tolist() == [0, 1, 0] and table["gnina_top3"].tolist() == [1, 1, 0]
    result = summarize(scores, n_boot=300, seed=2, peers=("gnina",))
    assert result["gnina_top1"]["hits"] == 1
    assert result["top1_difference_vs_gnina"]["mean"] == pytest.approx(0.0)  # a: +1, b: -1, c: 0
    low, high = result["top1_difference_vs_gnina"]["ci95"]
    assert low < 0 < high
    assert result["gnina_top1_difference_vs_docking"]["mean"] == pytest.approx(1 / 3)
    negatives = [0.9, 0.2, 0.1, 0.3, 0.2, 0.5, 0.6]
    expected = sum((p > n) + 0.5 * (p == n) for p in (0.1, 0.8) for n in negatives) / 14  # a tie counts half
    assert result["gnina_auc"] == pytest.approx(expected)
