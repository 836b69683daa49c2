"""The evaluation loop: logits and sample ids of one rank's share of a loader. `pecan predict`, `pecan score`
and training's validation all run it, so a pose scores the same whichever path reads it."""

from __future__ import annotations

from typing import Optional

import numpy as np
import torch

from pecan.engine.amp import amp_context
from pecan.report import EVAL_SPANS
from pecan.runtime import tracing
from pecan.runtime.progress import track


@torch.no_grad()
def score_share(
    model, loader, device: torch.device, amp: str, progress: bool, io_counts: Optional[np.ndarray] = None
) -> tuple[torch.Tensor, torch.Tensor]:
    """Logits and sample ids of this rank's share of ``loader`` (training's evaluation uses it too); the
    batches' I/O counters are added to ``io_counts`` when given."""
    model.eval()
    logits, ids = [], []
    for batch, counts in track(loader, "scoring", "batch", progress, close_line=False):
        if io_counts is not None:
            io_counts += counts
        if not batch.num_graphs:
            continue
        with tracing.span(*EVAL_SPANS["transfer"], size=batch.num_graphs, phase="eval"):
            batch = batch.to(device, non_blocking=True)
        with tracing.span(*EVAL_SPANS["forward"], size=batch.num_graphs), amp_context(device, amp):
            logits.append(model(batch).float())
        ids.append(batch.sample_id)
    empty = torch.zeros(0, device=device)
    return torch.cat(logits) if logits else empty, torch.cat(ids) if ids else empty.long()
