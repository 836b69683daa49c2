"""Losses toward the top of each complex's list (train.ranking_loss teacher_kl, top_weighted; ranking_target
teacher) and the soft BCE target (data.target_column, train.target_mix): hand-computed values and gradients."""

import math
from types import SimpleNamespace

import pytest
import torch

from pecan import config as config_module
from pecan.runtime.errors import ConfigError
from pecan.train.ranking import RankingLoss
from pecan.train.top_losses import teacher_kl_loss, top_weighted_pair_loss

NAN = float("nan")


def softplus(value: float) -> float:
    return math.log1p(math.exp(value))


def softmax(values):
    total = sum(math.exp(v) for v in values)
    return [math.exp(v) / total for v in values]


def ranking(weight, kind="pairwise", target="label", teacher=None, mix=1.0, temperature=1.0):
    train = SimpleNamespace(
        ranking_loss_weight=weight,
        ranking_loss=kind,
        ranking_target=target,
        ranking_rmsd_margin=1.0,
        ranking_temperature=temperature,
        target_mix=mix,
    )
    table = SimpleNamespace(rmsd=None, target=None if teacher is None else torch.tensor(teacher).numpy())
    return RankingLoss.from_config(train, SimpleNamespace(table=table), "cpu")


@pytest.mark.parametrize("temperature", [1.0, 2.0])
def test_teacher_kl_of_one_complex_equals_the_hand_computed_divergence(temperature):
    # complex 0: two docked poses (teacher 0.8, 0.5) and a crystal pose (no teacher score); complex 1: one pose
    logits = torch.tensor([1.0, 0.0, 3.0, -2.0], requires_grad=True)
    teacher = torch.tensor([0.8, 0.5, NAN, 0.3])
    loss = teacher_kl_loss(logits, teacher, torch.tensor([0, 0, 0, 1]), temperature)
    p = softmax([math.log(4.0) / temperature, 0.0])  # logit(0.8) = ln 4, logit(0.5) = 0
    q = softmax([1.0 / temperature, 0.0])
    expected = p[0] * math.log(p[0] / q[0]) + p[1] * math.log(p[1] / q[1])
    assert loss.item() == pytest.approx(expected, abs=1e-6)
    loss.backward()
    grad = [(q[0] - p[0]) / temperature, (q[1] - p[1]) / temperature, 0.0, 0.0]
    assert logits.grad.tolist() == pytest.approx(grad, abs=1e-6)


def test_teacher_kl_is_zero_on_the_teachers_own_order_and_without_complexes():
    teacher = torch.tensor([0.9, 0.2, 0.6])
    logits = torch.log(teacher) - torch.log1p(-teacher) + 5.0  # the teacher's logits, shifted
    assert teacher_kl_loss(logits, teacher, torch.tensor([4, 4, 4])).item() == pytest.approx(0.0, abs=1e-6)
    lone = torch.tensor([0.3, -0.1], requires_grad=True)
    loss = teacher_kl_loss(lone, torch.tensor([0.4, 0.7]), torch.tensor([1, 2]))
    loss.backward()
    assert loss.item() == 0.0 and lone.grad.tolist() == [0.0, 0.0]


def test_top_weighted_pairs_weigh_the_better_pose_by_its_rank():
    # complex 0 in the teacher's order 0.9 > 0.5 > 0.1 (ranks 1, 2, 3); complex 1 has one pose
    logits = torch.tensor([0.0, 1.0, 2.0, 4.0], requires_grad=True)
    key = torch.tensor([0.9, 0.5, 0.1, 0.7])
    loss = top_weighted_pair_loss(logits, key, torch.tensor([0, 0, 0, 1]))
    w = 1 / math.log2(3)  # the pair led by the second pose
    expected = (softplus(1.0) + softplus(2.0) + w * softplus(1.0)) / (2 + w)
    assert loss.item() == pytest.approx(expected, abs=1e-6)
    loss.backward()
    assert logits.grad[3].item() == 0.0 and logits.grad[0] < 0 < logits.grad[2]


def test_top_weighted_with_labels_ties_share_the_first_rank_and_nan_keys_take_no_part():
    logits = torch.tensor([0.5, -0.5, 1.0, 9.0])
    key = torch.tensor([1.0, 1.0, 0.0, NAN])  # two near-native poses, a decoy, a pose without a key
    loss = top_weighted_pair_loss(logits, key, torch.tensor([2, 2, 2, 2]), margin=0.5)
    assert loss.item() == pytest.approx((softplus(0.5) + softplus(1.5)) / 2, abs=1e-6)


def test_config_builds_each_kind_and_orders_pairs_by_the_teacher():
    batch = SimpleNamespace(
        y=torch.tensor([0.0, 0.0, 1.0]), complex_code=torch.tensor([1, 1, 1]), sample_id=torch.tensor([0, 1, 2])
    )
    logits = torch.tensor([0.0, 1.0, 2.0])
    teacher = [0.9, 0.5, NAN]  # the crystal-like third pose has no teacher score
    bce = torch.tensor(0.0)
    by_teacher = ranking(1.0, "pairwise", "teacher", teacher)(bce, logits, batch)
    assert by_teacher.item() == pytest.approx(softplus(1.0), abs=1e-6)  # the one teacher pair (0 before 1)
    kl = ranking(1.0, "teacher_kl", "label", teacher)(bce, logits, batch)
    p, q = softmax([math.log(9.0), 0.0]), softmax([0.0, 1.0])
    assert kl.item() == pytest.approx(sum(a * math.log(a / b) for a, b in zip(p, q)), abs=1e-6)
    top = ranking(1.0, "top_weighted", "label")(bce, logits, batch)
    assert top.item() == pytest.approx((softplus(-2.0) + softplus(-1.0)) / 2, abs=1e-6)


def test_losses_that_need_the_teacher_say_so_without_it(tmp_path):
    with pytest.raises(ConfigError, match="data.target_column"):
        ranking(1.0, "teacher_kl")
    with pytest.raises(ConfigError, match="data.target_column"):
        ranking(1.0, "top_weighted", "teacher")
    data = [f"data.data_dir={tmp_path}"]
    with pytest.raises(config_module.ConfigError, match="train.ranking_loss.*data.target_column"):
        config_module.load(None, [*data, "train.ranking_loss=teacher_kl"])
    for key, value in (("train.target_mix", 1.5), ("train.ranking_temperature", 0), ("train.fit_check_complexes", -1)):
        with pytest.raises(config_module.ConfigError, match=key):
            config_module.load(None, [*data, f"{key}={value}"])


def test_bce_target_mixes_the_soft_target_and_a_crystal_pose_keeps_its_label():
    batch = SimpleNamespace(y=torch.tensor([0.0, 1.0, 1.0]), sample_id=torch.tensor([2, 0, 1]))
    loss = ranking(0.0, teacher=[NAN, 0.6, 0.8], mix=0.25)
    # sample 2 (label 0, soft 0.8), sample 0 (crystal: no soft target), sample 1 (label 1, soft 0.6)
    assert loss.bce_target(batch).tolist() == pytest.approx([0.25 * 0.8, 1.0, 0.25 * 0.6 + 0.75])
    assert ranking(0.0).bce_target(batch) is not None and ranking(0.0).bce_target(batch).tolist() == [0.0, 1.0, 1.0]
