"""The per-complex pairwise ranking loss (train.ranking_loss_weight): hand-computed values and gradients."""

import math
from types import SimpleNamespace

import pytest
import torch

from pecan import config as config_module
from pecan.train.ranking import pairwise_ranking_loss, with_ranking_loss


def softplus(value: float) -> float:
    return math.log1p(math.exp(value))


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
    assert with_ranking_loss(bce, logits, batch, 0.0) is bce
    assert with_ranking_loss(bce, logits, batch, 0.5).item() == pytest.approx(0.7 + 0.5 * softplus(-1.5), abs=1e-6)


def test_config_key_defaults_off_and_rejects_negative_weights(tmp_path):
    data = [f"data.data_dir={tmp_path}"]
    assert config_module.load(None, data).train.ranking_loss_weight == 0.0
    assert config_module.load(None, [*data, "train.ranking_loss_weight=0.5"]).train.ranking_loss_weight == 0.5
    with pytest.raises(config_module.ConfigError, match="train.ranking_loss_weight"):
        config_module.load(None, [*data, "train.ranking_loss_weight=-1"])
