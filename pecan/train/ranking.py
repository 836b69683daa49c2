"""A per-complex ranking loss beside BCE: top-1 is a ranking of one complex's poses, which BCE never sees.

Pairwise logistic (RankNet) loss over the batch: for every pair (i, j) of poses of the same complex with
i near-native and j not, ``softplus(s_j - s_i)``, averaged over the pairs. Batches are not rearranged to hold
whole complexes; a complex split across batches contributes the pairs that share a batch, so the loss works
with every sampler and DDP layout (more poses of a complex per batch -- a larger batch_size -- give more pairs).
For a complex of two poses this equals the softmax (listwise) loss -log(e^{s_pos} / (e^{s_pos} + e^{s_neg})).
With train.ranking_target rmsd the pairs are every two poses of a complex whose RMSDs to the crystal pose differ
by at least a margin, the closer one to be ranked first: complexes without a near-native pose contribute too.
With train.ranking_loss listwise the loss is instead, for every complex with both kinds of pose in the batch, minus
the log of the softmax probability (over that complex's poses in the batch) of its near-native poses together,
averaged over those complexes: the top-1 objective, which weighs the best-scored wrong poses most where the
pairwise loss weighs every wrong pose alike. train.ranking_loss teacher_kl and top_weighted are
pecan.train.top_losses'; train.ranking_target teacher orders pairs by data.target_column's soft targets.

With data.target_column the BCE target itself is mixed: train.target_mix * soft target + (1 - mix) * label
(``RankingLoss.bce_target``), a crystal pose's soft target being its label.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor

from pecan.runtime.errors import ConfigError
from pecan.train.top_losses import teacher_kl_loss, top_weighted_pair_loss


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


def listwise_ranking_loss(logits: Tensor, labels: Tensor, complex_ids: Tensor) -> Tensor:
    """Mean over the batch's complexes with a near-native and another pose of
    ``logsumexp(s over the complex) - logsumexp(s over its near-native poses)``; 0 (with a gradient path) when no
    complex has both. Computed per pose over the same-complex mask (no host sync), each complex weighted once.

    Shapes: logits, labels, complex_ids :math:`(B,)`; output: scalar.
    """
    logits = logits.float().reshape(-1)
    positive = labels.reshape(-1) > 0.5
    same = complex_ids.reshape(-1, 1) == complex_ids.reshape(1, -1)  # [i, j]: j is a pose of i's complex
    size = same.sum(dim=1).to(logits.dtype)
    positives = (same & positive.reshape(1, -1)).sum(dim=1)
    valid = (positives > 0) & (positives < size)  # i's complex has both kinds of pose in the batch
    # Rows without a near-native pose take the whole complex as their "near-native" set: a finite, zero loss
    # (and zero weight), so no -inf enters the graph.
    near = same & (positive.reshape(1, -1) | ~valid.reshape(-1, 1))
    scores = logits.reshape(1, -1).expand(len(logits), -1)
    everything = scores.masked_fill(~same, float("-inf")).logsumexp(dim=1)
    native = scores.masked_fill(~near, float("-inf")).logsumexp(dim=1)
    # Each pose of a complex carries the complex's loss: weighed by 1 / (poses of the complex) it counts once, and
    # the weights sum to the number of such complexes.
    weights = valid.to(logits.dtype) / size
    return ((everything - native) * weights).sum() / weights.sum().clamp_min(1.0)


def _training_rmsd(train, train_set, device) -> Tensor | None:
    """The training set's RMSDs (its table's) as a tensor on ``device`` when train.ranking_target is rmsd and the
    ranking loss is on, else None; an index without RMSDs is an error naming the key."""
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


def _training_targets(train_set, device) -> Tensor | None:
    """The training set's soft targets (data.target_column; NaN where none) on ``device``, or None without."""
    target = getattr(train_set.table, "target", None)
    return None if target is None else torch.as_tensor(target, dtype=torch.float32, device=device)


def _needs_targets(target: Tensor | None, what: str) -> Tensor:
    if target is None:
        raise ConfigError(f"{what} needs data.target_column (the teacher's score of every training pose); it is empty")
    return target


def _pair_loss(train, train_set, device, target: Tensor | None) -> Callable[..., Tensor]:
    """(logits, batch) -> the configured ranking loss."""
    if train.ranking_loss == "teacher_kl":
        teacher = _needs_targets(target, "train.ranking_loss: teacher_kl")
        temperature = float(train.ranking_temperature)
        return lambda logits, batch: teacher_kl_loss(
            logits, teacher[batch.sample_id.reshape(-1)], batch.complex_code, temperature
        )
    if train.ranking_loss == "listwise":
        return lambda logits, batch: listwise_ranking_loss(logits, batch.y, batch.complex_code)
    key, margin = _order(train, train_set, device, target)
    if train.ranking_loss == "top_weighted":
        return lambda logits, batch: top_weighted_pair_loss(logits, key(batch), batch.complex_code, margin)
    if train.ranking_target == "label":
        return lambda logits, batch: pairwise_ranking_loss(logits, batch.y, batch.complex_code)
    if train.ranking_target == "rmsd":
        rmsd = _training_rmsd(train, train_set, device)
        return lambda logits, batch: rmsd_ranking_loss(
            logits, rmsd[batch.sample_id.reshape(-1)], batch.complex_code, margin
        )
    return lambda logits, batch: top_weighted_pair_loss(logits, key(batch), batch.complex_code, margin, weighted=False)


def _order(train, train_set, device, target: Tensor | None) -> tuple[Callable[..., Tensor], float]:
    """The order of train.ranking_target as (batch -> key, higher first; margin)."""
    if train.ranking_target == "rmsd":
        rmsd = _training_rmsd(train, train_set, device)
        return (lambda batch: -rmsd[batch.sample_id.reshape(-1)]), float(train.ranking_rmsd_margin)
    if train.ranking_target == "teacher":
        teacher = _needs_targets(target, "train.ranking_target: teacher")
        return (lambda batch: teacher[batch.sample_id.reshape(-1)]), 0.0
    return (lambda batch: batch.y.float()), 0.5


@dataclass(frozen=True)
class RankingLoss:
    """BCE plus the configured ranking loss, built once from the train section (``from_config``): the loss kind
    and target are resolved here, not on every step. Called as ``loss(bce, logits, batch)``; ``bce_target(batch)``
    is the BCE target (the labels, or mixed with data.target_column's soft targets)."""

    weight: float
    pair_loss: Optional[Callable[..., Tensor]] = None  # (logits, batch) -> ranking loss; None when weight is 0
    rmsd: Optional[Tensor] = None  # train.ranking_target rmsd: every training row's RMSD, by sample id
    target: Optional[Tensor] = None  # data.target_column: every training row's soft target (NaN: none), by sample id
    target_mix: float = 1.0

    @classmethod
    def from_config(cls, train, train_set, device) -> "RankingLoss":
        """From ``train.ranking_loss_weight``, ``ranking_loss``, ``ranking_target``, ``ranking_rmsd_margin``,
        ``ranking_temperature`` and ``target_mix``; the training set's RMSDs and soft targets are read once
        (ConfigError naming the key when a loss needs them and the index has none)."""
        weight = float(train.ranking_loss_weight)
        target = _training_targets(train_set, device)
        mix = float(getattr(train, "target_mix", 1.0))
        if weight <= 0:
            return cls(weight, target=target, target_mix=mix)
        rmsd = _training_rmsd(train, train_set, device)
        return cls(weight, _pair_loss(train, train_set, device, target), rmsd, target, mix)

    def bce_target(self, batch) -> Tensor:
        """The labels when there is no soft-target column; else target_mix * soft + (1 - target_mix) * label, a
        pose without a soft target (a crystal pose) taking its label."""
        labels = batch.y.float()
        if self.target is None:
            return labels
        soft = self.target[batch.sample_id.reshape(-1)]
        soft = torch.where(torch.isnan(soft), labels, soft)
        return self.target_mix * soft + (1.0 - self.target_mix) * labels

    def __call__(self, bce: Tensor, logits: Tensor, batch) -> Tensor:
        """``bce`` plus ``weight`` times the ranking loss of this batch (``bce`` itself when the weight is 0)."""
        return bce if self.pair_loss is None else bce + self.weight * self.pair_loss(logits, batch)
