"""The figures `pecan score` and `pecan predict` print: the AUC within each ligand beside the pooled one, and
no top-k from complexes of one pose (nothing is ranked there)."""

import logging
import math

import numpy as np
import pandas as pd

from pecan.scoring.figures import metrics, metrics_line, report_figures


def frame(rows):
    """scores.csv rows from (complex_id, pecan_score, label, docking_score)."""
    table = pd.DataFrame(rows, columns=["complex_id", "pecan_score", "label", "docking_score"])
    table["logit"] = np.log(table["pecan_score"] / (1 - table["pecan_score"]))
    return table


def test_the_within_ligand_auc_is_reported_beside_the_pooled_one():
    # Each ligand's near-native pose scores above its other pose, but ligand b scores low throughout.
    scores = frame([("a", 0.9, 1, -9.0), ("a", 0.8, 0, -8.0), ("b", 0.2, 1, -7.0), ("b", 0.1, 0, -8.5)])
    values = metrics(scores)
    assert values["auc"] == 0.75 and values["ligand_auc"] == 1.0 and values["ligand_auc_complexes"] == 2
    assert values["docking_ligand_auc"] == 0.5  # a: right, b: wrong
    assert "AUC 0.750 pooled, 1.000 within ligands (2)" in metrics_line(values)
    assert "accuracy at score 0.5" in metrics_line(values)


def test_complexes_of_one_pose_report_no_top_k_and_a_warning(caplog):
    scores = frame([(f"file{k}", 0.3, int(k == 0), -7.0 - k) for k in range(9)])
    values = metrics(scores)
    assert math.isnan(values["top1"]) and math.isnan(values["docking_top1"])
    assert values["single_pose_complexes"] == 9 and values["first_native_rank"] == {}
    assert "top-1 n/a top-3 n/a" in metrics_line(values)
    values["splits"] = {}
    with caplog.at_level(logging.WARNING):
        report_figures(values, {"train": [], "val": []})
    assert "9 of the 9 labelled complexes have one pose" in caplog.text


def test_top_k_counts_only_the_complexes_with_several_poses():
    rows = [("ranked", 0.9, 0, -9.0), ("ranked", 0.4, 1, -8.0), ("alone", 0.7, 1, -6.0)]
    values = metrics(frame(rows))
    assert values["top1"] == 0.0 and values["top3"] == 1.0 and values["first_native_rank"] == {"ranked": 2}
    assert values["single_pose_complexes"] == 1
