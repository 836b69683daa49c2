"""Ranking losses that weigh the top of each complex's list (train.ranking_loss teacher_kl and top_weighted).

Both work within a batch, like the other ranking losses (pecan.train.ranking): a complex contributes the poses
that share a batch (data.shuffle complex keeps a complex's poses together). Poses without an order -- a NaN
key: a crystal pose under a teacher, an unknown RMSD -- take part in nothing.

- ``teacher_kl_loss``: per complex, KL(softmax(t / T) || softmax(s / T)) over its poses, ``t`` the teacher's logits
  (logit of its probability, clamped to [1e-4, 1 - 1e-4]), ``s`` the model's, averaged over complexes with at least
  two poses. Its minimum is the teacher's whole order and spread within each complex, the first pose most.
- ``top_weighted_pair_loss``: softplus(s_j - s_i) over same-complex pairs with ``key_i - key_j >= margin`` (and
  > 0), each weighted by 1 / log2(1 + r_i), r_i the rank of the better pose i in the key's order within its
  complex in the batch (1 + the poses strictly ahead of it): a pair whose better pose is first weighs 1, third
  0.5. The weighted mean over pairs.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor

PROBABILITY_CLAMP = 1e-4


def teacher_logits(probability: Tensor) -> Tensor:
    """logit(p) of a teacher's probabilities, clamped so that 0 and 1 stay finite (NaN stays NaN)."""
    p = probability.float().clamp(PROBABILITY_CLAMP, 1.0 - PROBABILITY_CLAMP)
    return torch.log(p) - torch.log1p(-p)


def teacher_kl_loss(logits: Tensor, teacher: Tensor, complex_ids: Tensor, temperature: float = 1.0) -> Tensor:
    """Mean over the batch's complexes with two or more poses of known teacher probability of KL(teacher softmax
    || model softmax) over those poses, both at ``temperature``; 0 (with a gradient path) when there is none.

    Shapes: logits, teacher (probabilities, NaN: no teacher score), complex_ids :math:`(B,)`; output: scalar.
    """
    logits = logits.float().reshape(-1) / temperature
    known = ~torch.isnan(teacher.reshape(-1))
    t = torch.where(known, teacher_logits(teacher.reshape(-1)), torch.zeros_like(logits)) / temperature
    same = (complex_ids.reshape(-1, 1) == complex_ids.reshape(1, -1)) & known.reshape(1, -1) & known.reshape(-1, 1)
    size = same.sum(dim=1).to(logits.dtype)
    # Every row keeps its own pose, so no row is all -inf (whose logsumexp would send NaN back through 0 * inf).
    same = same | torch.eye(len(logits), dtype=torch.bool, device=logits.device)
    # Row i holds i's complex: log-softmax of the teacher and the model over it, taken at column i (pose i).
    model_norm = logits.reshape(1, -1).expand(len(logits), -1).masked_fill(~same, float("-inf")).logsumexp(dim=1)
    teacher_norm = t.reshape(1, -1).expand(len(t), -1).masked_fill(~same, float("-inf")).logsumexp(dim=1)
    log_q = torch.where(known, logits - model_norm, torch.zeros_like(logits))
    log_p = torch.where(known, t - teacher_norm, torch.zeros_like(t))
    per_pose = log_p.exp() * (log_p - log_q)  # the complex's KL is the sum over its poses
    valid = known & (size >= 2)
    # Each pose's term counts once; the complex count is the sum over its poses of 1 / size.
    complexes = (valid.to(logits.dtype) / size.clamp_min(1.0)).sum()
    return (per_pose * valid.to(logits.dtype)).sum() / complexes.clamp_min(1.0)


def top_weighted_pair_loss(
    logits: Tensor, key: Tensor, complex_ids: Tensor, margin: float = 0.0, weighted: bool = True
) -> Tensor:
    """Weighted mean of softplus(s_j - s_i) over same-complex pairs with key_i ahead of key_j by ``margin`` (and
    by more than 0), each weighted 1 / log2(1 + rank of i) (every pair alike unless ``weighted``); 0 (with a
    gradient path) without such a pair.

    Shapes: logits, key (higher is better; NaN: no place in the order), complex_ids :math:`(B,)`; output: scalar.
    """
    logits = logits.float().reshape(-1)
    key = key.float().reshape(-1)
    same = complex_ids.reshape(-1, 1) == complex_ids.reshape(1, -1)
    ahead = key.reshape(1, -1) - key.reshape(-1, 1)  # [i, j] = key_j - key_i (NaN compares False)
    rank = 1.0 + (same & (ahead > 0)).sum(dim=1).to(logits.dtype)  # poses strictly ahead of i, plus one
    pairs = same & (-ahead >= margin) & (-ahead > 0)  # [i, j]: i ahead of j
    weights = pairs.to(logits.dtype)
    if weighted:
        weights = weights / torch.log2(1.0 + rank).reshape(-1, 1)
    margins = logits.reshape(1, -1) - logits.reshape(-1, 1)  # [i, j] = s_j - s_i
    # Without pairs the sum is 0 over a clamped 0: a zero loss with a gradient path.
    return (F.softplus(margins) * weights).sum() / weights.sum().clamp_min(1e-12)
