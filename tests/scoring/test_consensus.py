"""The consensus of the model and the docking score (pecan.scoring.consensus): standardised within a ligand,
ranked with clashes last, the ranking figures following it, and the shipped model's description."""

import json

import numpy as np
import pandas as pd
import pytest

from pecan import pretrained
from pecan.runtime.errors import ConfigError
from pecan.scoring.consensus import check_weight, consensus, consensus_column, standardised
from pecan.scoring.figures import metrics
from pecan.scoring.output import ranked


def test_standardised_values_and_a_constant_or_single_pose():
    z = standardised(np.array([1.0, 2.0, 3.0]))
    np.testing.assert_allclose(z, [-1.224744871, 0.0, 1.224744871])
    assert standardised(np.array([4.0, 4.0])).tolist() == [0.0, 0.0]
    assert standardised(np.array([7.0])).tolist() == [0.0]


def test_the_docking_score_moves_the_order_by_its_weight():
    logits = np.array([2.0, 1.5, -1.0])  # the model prefers pose 0
    docking = np.array([-6.0, -9.5, -5.0])  # the docking score prefers pose 1 (lower is better)
    np.testing.assert_allclose(consensus(logits, docking, 0.0), standardised(logits))
    assert np.argmax(consensus(logits, docking, 0.0)) == 0
    assert np.argmax(consensus(logits, docking, 1.0)) == 1
    expected = standardised(logits) + 0.5 * standardised(-docking)
    np.testing.assert_allclose(consensus(logits, docking, 0.5), expected)
    with pytest.raises(ValueError, match="finite docking score"):
        consensus(logits, np.array([-6.0, np.nan, -5.0]), 1.0)


def test_the_consensus_column_standardises_within_each_complex():
    scores = pd.DataFrame(
        {
            "complex_id": ["a", "b", "a", "b", "a"],
            "logit": [0.0, 3.0, 1.0, 1.0, 2.0],
            "docking_score": [-5.0, -7.0, -6.0, -8.0, -4.0],
        }
    )
    column = consensus_column(scores, 1.0)
    a, b = scores["complex_id"] == "a", scores["complex_id"] == "b"
    np.testing.assert_allclose(column[a.to_numpy()], consensus(np.array([0.0, 1.0, 2.0]), np.array([-5, -6, -4]), 1))
    np.testing.assert_allclose(column[b.to_numpy()], consensus(np.array([3.0, 1.0]), np.array([-7.0, -8.0]), 1))


@pytest.mark.parametrize("bad", [-0.5, float("nan"), float("inf")])
def test_a_weight_must_be_finite_and_not_negative(bad):
    with pytest.raises(ConfigError, match=r"--docking-weight must be a finite number >= 0"):
        check_weight(bad, "pecan score: --docking-weight")
    assert check_weight(None, "x") == 0.0 and check_weight(2, "x") == 2.0


def test_ranked_by_the_consensus_keeps_clashes_last_and_the_score_as_it_was():
    logits = np.array([0.0, 2.0, 1.0, 3.0])
    by = np.array([0.5, -1.0, 2.0, 9.0])
    order, score, rank = ranked(logits, last=[False, False, False, True], by=by)
    assert order.tolist() == [2, 0, 1, 3]  # by the consensus; the clash (the best by both) last
    assert rank.tolist() == [2, 3, 1, 4]
    np.testing.assert_allclose(score, 1 / (1 + np.exp(-logits)))
    assert ranked(logits)[0].tolist() == [3, 1, 2, 0]  # without it: by score


def test_the_ranking_figures_follow_the_consensus_rank_and_the_auc_the_score():
    # one complex: the model's best pose (0.9) is a decoy, the consensus ranks the native pose first
    scores = pd.DataFrame(
        {
            "complex_id": ["c"] * 3,
            "pose_id": ["p1", "p2", "p3"],
            "pecan_score": [0.9, 0.6, 0.1],
            "logit": [2.2, 0.4, -2.2],
            "docking_score": [-5.0, -9.0, -4.0],
            "label": [0, 1, 0],
        }
    )
    alone = metrics(scores.assign(pecan_rank=[1, 2, 3]))
    together = metrics(scores.assign(pecan_rank=[2, 1, 3], pecan_consensus=[0.1, 1.0, -1.1]))
    assert alone["top1"] == 0.0 and together["top1"] == 1.0
    assert together["auc"] == alone["auc"]  # the AUC is the probability's
    assert together["first_native_rank"] == {"c": 1} and alone["first_native_rank"] == {"c": 2}


def test_the_shipped_description_names_checkpoints_and_a_weight(tmp_path, monkeypatch):
    monkeypatch.setattr(pretrained, "HERE", tmp_path)
    monkeypatch.setattr(pretrained, "SHIPPED", tmp_path / "shipped.json")
    with pytest.raises(FileNotFoundError, match="shipped.json"):  # never a checkpoint ranked without its weight
        pretrained.default_checkpoints()
    with pytest.raises(FileNotFoundError, match="shipped.json"):
        pretrained.default_docking_weight()
    (tmp_path / "a.pt").write_bytes(b"a")
    (tmp_path / "b.pt").write_bytes(b"b")
    pretrained.SHIPPED.write_text(json.dumps({"checkpoints": ["a.pt", "b.pt"], "docking_weight": 1.5}))
    assert pretrained.default_checkpoints() == (tmp_path / "a.pt", tmp_path / "b.pt")
    assert pretrained.default_checkpoint() == tmp_path / "a.pt" and pretrained.default_docking_weight() == 1.5
    pretrained.SHIPPED.write_text(json.dumps({"checkpoints": ["a.pt", "gone.pt"]}))
    with pytest.raises(FileNotFoundError, match="gone.pt"):
        pretrained.default_checkpoints()
    for bad in ("{", json.dumps({"docking_weight": 1}), json.dumps({"checkpoints": [], "docking_weight": 1})):
        pretrained.SHIPPED.write_text(bad)
        with pytest.raises(ValueError, match="shipped.json"):
            pretrained.shipped()
    for weight in (-1, "Infinity", "NaN"):  # as the option's check (consensus.check_weight)
        pretrained.SHIPPED.write_text('{"checkpoints": ["a.pt"], "docking_weight": %s}' % weight)
        with pytest.raises(ValueError, match="docking_weight that is a finite number >= 0"):
            pretrained.shipped()
