"""The per-complex pairwise ranking loss (train.ranking_loss_weight): hand-computed values and gradients."""

import math
from types import SimpleNamespace

import numpy as np
import pytest
import torch

from pecan import config as config_module
from pecan.train.ranking import RankingLoss, listwise_ranking_loss, pairwise_ranking_loss, rmsd_ranking_loss


def softplus(value: float) -> float:
    return math.log1p(math.exp(value))


def ranking(weight, kind="pairwise", target="label", margin=1.0, rmsd=None):
    """RankingLoss built from a train section holding only the four keys it reads (and a table's RMSDs)."""
    train = SimpleNamespace(
        ranking_loss_weight=weight, ranking_loss=kind, ranking_target=target, ranking_rmsd_margin=margin
    )
    return RankingLoss.from_config(train, SimpleNamespace(table=SimpleNamespace(rmsd=rmsd)), "cpu")


def test_two_pose_complex_equals_the_hand_computed_softmax_loss():
    logits = torch.tensor([2.0, 0.5], requires_grad=True)
    loss = pairwise_ranking_loss(logits, torch.tensor([1.0, 0.0]), torch.tensor([7, 7]))
    assert loss.shape == ()
    expected = softplus(0.5 - 2.0)  # 0.2014...
    assert loss.item() == pytest.approx(expected, abs=1e-6)
    assert loss.item() == pytest.approx(-math.log(math.exp(2.0) / (math.exp(2.0) + math.exp(0.5))), abs=1e-6)
    loss.backward()
    sigma = 1 / (1 + math.exp(-(0.5 - 2.0)))  # d softplus(s_neg - s_pos) / d s_neg
    assert logits.grad.tolist() == pytest.approx([-sigma, sigma], abs=1e-6)


def test_only_same_complex_pairs_count():
    # complex 0: one near-native (1.0) and two others (0.0, 2.0); complex 1: no near-native pose
    logits = torch.tensor([1.0, 0.0, 2.0, 5.0, -3.0], requires_grad=True)
    labels = torch.tensor([1.0, 0.0, 0.0, 0.0, 0.0])
    complexes = torch.tensor([0, 0, 0, 1, 1])
    loss = pairwise_ranking_loss(logits, labels, complexes)
    assert loss.item() == pytest.approx((softplus(0.0 - 1.0) + softplus(2.0 - 1.0)) / 2, abs=1e-6)
    loss.backward()
    assert logits.grad[3:].tolist() == [0.0, 0.0]  # poses of a complex without a pair get no gradient
    assert logits.grad[0] < 0 < logits.grad[2]  # the near-native pose is pushed up, the high wrong one down


def test_a_batch_without_pairs_gives_zero_with_a_gradient_path():
    logits = torch.tensor([0.3, -0.2], requires_grad=True)
    loss = pairwise_ranking_loss(logits, torch.tensor([1.0, 0.0]), torch.tensor([1, 2]))  # split complexes
    assert loss.item() == 0.0
    loss.backward()
    assert logits.grad.tolist() == [0.0, 0.0]


def test_weight_zero_returns_bce_itself_and_a_weight_adds_the_loss():
    bce = torch.tensor(0.7)
    batch = SimpleNamespace(y=torch.tensor([1.0, 0.0]), complex_code=torch.tensor([3, 3]))
    logits = torch.tensor([2.0, 0.5])
    assert ranking(0.0)(bce, logits, batch) is bce
    assert ranking(0.5)(bce, logits, batch).item() == pytest.approx(0.7 + 0.5 * softplus(-1.5), abs=1e-6)


def test_config_key_defaults_off_and_rejects_negative_weights(tmp_path):
    data = [f"data.data_dir={tmp_path}"]
    assert config_module.load(None, data).train.ranking_loss_weight == 0.0
    assert config_module.load(None, [*data, "train.ranking_loss_weight=0.5"]).train.ranking_loss_weight == 0.5
    with pytest.raises(config_module.ConfigError, match="train.ranking_loss_weight"):
        config_module.load(None, [*data, "train.ranking_loss_weight=-1"])


def test_rmsd_pairs_order_every_two_poses_apart_by_the_margin():
    # complex 0: 0.5 A, 3.0 A, 3.2 A (the last two within the 1 A margin: no pair); complex 1: 5 A, 8 A, unknown
    logits = torch.tensor([1.0, 0.0, 2.0, -1.0, 0.5, 9.0], requires_grad=True)
    rmsd = torch.tensor([0.5, 3.0, 3.2, 5.0, 8.0, float("nan")])
    complexes = torch.tensor([0, 0, 0, 1, 1, 1])
    loss = rmsd_ranking_loss(logits, rmsd, complexes, margin=1.0)
    pairs = [(0, 1), (0, 2), (3, 4)]  # (closer, farther): complex 1 teaches without a near-native pose
    expected = sum(softplus(logits[j].item() - logits[i].item()) for i, j in pairs) / len(pairs)
    assert loss.item() == pytest.approx(expected, abs=1e-6)
    loss.backward()
    assert logits.grad[5].item() == 0.0  # the pose of unknown RMSD is in no pair
    assert logits.grad[3] < 0 < logits.grad[4]  # the closer decoy is pushed up, the farther one down
    assert rmsd_ranking_loss(logits, rmsd, complexes, margin=10.0).item() == 0.0  # no pair that far apart


def test_the_rmsd_target_pairs_poses_by_the_training_rows_rmsds():
    bce = torch.tensor(0.7)
    batch = SimpleNamespace(
        y=torch.tensor([0.0, 0.0]), complex_code=torch.tensor([3, 3]), sample_id=torch.tensor([2, 0])
    )
    logits = torch.tensor([2.0, 0.5])
    assert ranking(0.5)(bce, logits, batch).item() == pytest.approx(0.7)  # no near-native: no label pair
    table_rmsd = np.array([3.0, 9.0, 6.0], np.float32)  # by sample id: the batch's poses are 6 A and 3 A
    got = ranking(0.5, target="rmsd", rmsd=table_rmsd)(bce, logits, batch).item()
    assert got == pytest.approx(0.7 + 0.5 * softplus(2.0 - 0.5), abs=1e-6)


def test_ranking_target_rmsd_needs_rmsds_and_is_off_without_the_loss(tmp_path):
    data = [f"data.data_dir={tmp_path}"]
    config = config_module.load(None, [*data, "train.ranking_target=rmsd", "train.ranking_loss_weight=1"])
    no_rmsd = SimpleNamespace(table=SimpleNamespace(rmsd=None))
    with pytest.raises(config_module.ConfigError, match="train.ranking_target"):
        RankingLoss.from_config(config.train, no_rmsd, "cpu")
    unknown = SimpleNamespace(table=SimpleNamespace(rmsd=np.full(3, np.nan, np.float32)))
    with pytest.raises(config_module.ConfigError, match="rmsd column"):
        RankingLoss.from_config(config.train, unknown, "cpu")
    known = SimpleNamespace(table=SimpleNamespace(rmsd=np.array([0.0, 2.5], np.float32)))
    assert RankingLoss.from_config(config.train, known, "cpu").rmsd.tolist() == [0.0, 2.5]
    off = config_module.load(None, [*data, "train.ranking_target=rmsd"])  # weight 0: no ranking loss at all
    assert RankingLoss.from_config(off.train, no_rmsd, "cpu").rmsd is None
    with pytest.raises(config_module.ConfigError, match="train.ranking_target"):
        config_module.load(None, [*data, "train.ranking_target=distance"])
    with pytest.raises(config_module.ConfigError, match="train.ranking_rmsd_margin"):
        config_module.load(None, [*data, "train.ranking_rmsd_margin=-1"])


def test_listwise_loss_is_the_softmax_loss_of_each_complexs_near_native_poses():
    # complex 4: near-native 1.0 and 0.5, others 2.0 and -1.0; complex 9: 0.3 near-native, 0.1 other;
    # complex 2: no near-native pose (no loss, no gradient)
    logits = torch.tensor([1.0, 2.0, 0.5, -1.0, 0.3, 0.1, 7.0, 3.0], requires_grad=True)
    labels = torch.tensor([1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 0.0, 0.0])
    complexes = torch.tensor([4, 4, 4, 4, 9, 9, 2, 2])
    loss = listwise_ranking_loss(logits, labels, complexes)
    first = -math.log((math.exp(1.0) + math.exp(0.5)) / sum(math.exp(v) for v in (1.0, 2.0, 0.5, -1.0)))
    second = -math.log(math.exp(0.3) / (math.exp(0.3) + math.exp(0.1)))
    assert loss.item() == pytest.approx((first + second) / 2, abs=1e-6)  # each complex counted once
    loss.backward()
    assert logits.grad[6:].tolist() == [0.0, 0.0]
    # d/ds_other = softmax probability / 2 complexes: the best-scored wrong pose is pushed down hardest
    total = sum(math.exp(v) for v in (1.0, 2.0, 0.5, -1.0))
    assert logits.grad[1].item() == pytest.approx(math.exp(2.0) / total / 2, abs=1e-6)
    assert logits.grad[1] > logits.grad[3] > 0 > logits.grad[0]
    # two poses: the same value as the pairwise loss
    two = torch.tensor([0.3, 0.1])
    assert listwise_ranking_loss(two, torch.tensor([1.0, 0.0]), torch.tensor([9, 9])).item() == pytest.approx(
        pairwise_ranking_loss(two, torch.tensor([1.0, 0.0]), torch.tensor([9, 9])).item(), abs=1e-6
    )


def test_listwise_loss_without_a_complex_of_both_kinds_is_zero_with_a_gradient_path():
    logits = torch.tensor([0.3, -0.2, 4.0], requires_grad=True)
    loss = listwise_ranking_loss(logits, torch.tensor([1.0, 0.0, 1.0]), torch.tensor([1, 2, 1]))
    assert loss.item() == 0.0
    loss.backward()
    assert torch.isfinite(logits.grad).all() and logits.grad.tolist() == [0.0, 0.0, 0.0]


def test_ranking_loss_key_selects_listwise_and_refuses_rmsd_targets(tmp_path):
    data = [f"data.data_dir={tmp_path}"]
    assert config_module.load(None, data).train.ranking_loss == "pairwise"
    bce = torch.tensor(0.7)
    batch = SimpleNamespace(y=torch.tensor([1.0, 0.0, 0.0]), complex_code=torch.tensor([3, 3, 3]))
    logits = torch.tensor([2.0, 0.5, 1.0])
    expected = 0.7 + 0.5 * -math.log(math.exp(2.0) / (math.exp(2.0) + math.exp(0.5) + math.exp(1.0)))
    assert ranking(0.5, kind="listwise")(bce, logits, batch).item() == pytest.approx(expected, abs=1e-6)
    with pytest.raises(config_module.ConfigError, match="train.ranking_loss"):
        config_module.load(None, [*data, "train.ranking_loss=listwise", "train.ranking_target=rmsd"])
    with pytest.raises(config_module.ConfigError, match="train.ranking_loss"):
        config_module.load(None, [*data, "train.ranking_loss=softmax"])
