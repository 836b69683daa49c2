"""A per-complex ranking loss beside BCE: top-1 is a ranking of one complex's poses, which BCE never sees.

Pairwise logistic (RankNet) loss over the batch: for every pair (i, j) of poses of the same complex with
i near-native and j not, ``softplus(s_j - s_i)``, averaged over the pairs. Batches are not rearranged to hold
whole complexes; a complex split across batches contributes the pairs that share a batch, so the loss works
with every sampler and DDP layout (more poses of a complex per batch -- a larger batch_size -- give more pairs).
For a complex of two poses this equals the softmax (listwise) loss -log(e^{s_pos} / (e^{s_pos} + e^{s_neg})).
With train.ranking_target rmsd the pairs are every two poses of a complex whose RMSDs to the crystal pose differ
by at least a margin, the closer one to be ranked first: complexes without a near-native pose contribute too.
"""

from __future__ import annotations

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

from pecan.runtime.errors import ConfigError


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


def rmsd_ranking_loss(logits: Tensor, rmsd: Tensor, complex_ids: Tensor, margin: float) -> Tensor:
    """Mean softplus(s_far - s_close) over same-complex pairs whose RMSDs differ by at least ``margin`` (poses
    of unknown RMSD, NaN, are in no pair); 0 (with a gradient path) when the batch has no such pair.

    Shapes: logits, rmsd, complex_ids :math:`(B,)`; output: scalar.
    """
    logits = logits.float().reshape(-1)
    rmsd = rmsd.float().reshape(-1)
    same = complex_ids.reshape(-1, 1) == complex_ids.reshape(1, -1)
    # [i, j]: i at least margin closer to the crystal pose than j (False wherever an RMSD is NaN)
    pairs = same & (rmsd.reshape(1, -1) - rmsd.reshape(-1, 1) >= margin)
    margins = logits.reshape(1, -1) - logits.reshape(-1, 1)  # [i, j] = s_j - s_i
    weights = pairs.to(logits.dtype)
    return (F.softplus(margins) * weights).sum() / weights.sum().clamp_min(1.0)


def with_ranking_loss(
    bce: Tensor, logits: Tensor, batch, weight: float, rmsd: Tensor | None = None, margin: float = 1.0
) -> Tensor:
    """BCE plus ``weight`` times the ranking loss (``bce`` itself when weight is 0): pairs by label, or by RMSD
    when ``rmsd`` (the batch's poses' RMSDs, train.ranking_target rmsd) is given."""
    if weight <= 0:
        return bce
    if rmsd is not None:
        return bce + weight * rmsd_ranking_loss(logits, rmsd, batch.complex_code, margin)
    return bce + weight * pairwise_ranking_loss(logits, batch.y, batch.complex_code)


def ranking_rmsd(config, train_set, device) -> Tensor | None:
    """The training set's RMSDs (its table's) as a tensor on ``device`` when train.ranking_target is rmsd and the
    ranking loss is on, else None; an index without RMSDs is an error naming the key."""
    train = config.train
    if train.ranking_target != "rmsd" or train.ranking_loss_weight <= 0:
        return None
    table = train_set.table
    known = None if table.rmsd is None else table.rmsd[~np.isnan(table.rmsd)]
    if known is None or known.size == 0:
        raise ConfigError(
            "train.ranking_target: rmsd needs the training index's rmsd column (poses converted with a crystal "
            "ligand); it has none"
        )
    return torch.as_tensor(table.rmsd, dtype=torch.float32, device=device)
