"""A per-complex ranking loss beside BCE: top-1 is a ranking of one complex's poses, which BCE never sees.

Pairwise logistic (RankNet) loss over the batch: for every pair (i, j) of poses of the same complex with
i near-native and j not, ``softplus(s_j - s_i)``, averaged over the pairs. Batches are not rearranged to hold
whole complexes; a complex split across batches contributes the pairs that share a batch, so the loss works
with every sampler and DDP layout (more poses of a complex per batch -- a larger batch_size -- give more pairs).
For a complex of two poses this equals the softmax (listwise) loss -log(e^{s_pos} / (e^{s_pos} + e^{s_neg})).
"""

from __future__ import annotations

import torch.nn.functional as F
from torch import Tensor


def pairwise_ranking_loss(logits: Tensor, labels: Tensor, complex_ids: Tensor) -> Tensor:
    """Mean softplus(s_neg - s_pos) over same-complex (near-native, other) pairs; 0 (with a gradient path)
    when the batch has no such pair.

    Shapes: logits, labels, complex_ids :math:`(B,)`; output: scalar.
    """
    logits = logits.float().reshape(-1)
    positive = labels.reshape(-1) > 0.5
    same = complex_ids.reshape(-1, 1) == complex_ids.reshape(1, -1)
    pairs = same & positive.reshape(-1, 1) & ~positive.reshape(1, -1)  # [i, j]: i near-native, j not
    margins = logits.reshape(1, -1) - logits.reshape(-1, 1)  # [i, j] = s_j - s_i
    weights = pairs.to(logits.dtype)
    # The count stays a tensor (clamped) so there is no host sync per step.
    return (F.softplus(margins) * weights).sum() / weights.sum().clamp_min(1.0)


def with_ranking_loss(bce: Tensor, logits: Tensor, batch, weight: float) -> Tensor:
    """BCE plus ``weight`` times the ranking loss (``bce`` itself when weight is 0)."""
    if weight <= 0:
        return bce
    return bce + weight * pairwise_ranking_loss(logits, batch.y, batch.complex_code)
