"""What a non-finite training loss is blamed on: the rank(s) that computed it and the poses of their batches.

The per-step flag says only that some rank saw a NaN/inf loss; every rank then stops (or skips the step)
together. Naming the culprit needs one more collective, run only on that rare step: each rank contributes its
own loss and batch when it is the non-finite one, so rank 0's message (and logs/rank0.log, read first) names
the rank that saw it and that rank's poses, never its own healthy batch.
"""

from __future__ import annotations

import math
from typing import Optional

import torch

from pecan.runtime.collectives import all_gather_object


def own_part(loss: torch.Tensor, rank: int, poses: Optional[str]) -> Optional[tuple[int, float, Optional[str]]]:
    """This rank's (rank, loss, poses of its batch) when its loss is not finite, else None."""
    value = float(loss.detach())
    return None if math.isfinite(value) else (rank, value, poses)


def blame(loss: torch.Tensor, rank: int, poses: Optional[str]) -> tuple[str, str]:
    """(the non-finite losses, 'rank R, batch of rank R: POSES' for every rank whose loss was not finite); a
    collective: every rank calls it on the same step."""
    parts = [part for part in all_gather_object(own_part(loss, rank, poses), what="nonfinite") if part]
    if not parts:  # not reached: some rank raised the flag
        return f"{float(loss.detach()):g}", f"rank {rank}"
    values = ", ".join(f"{value:g}" for _, value, _ in parts)
    return values, "; ".join(f"rank {r}" + (f", batch of rank {r}: {where}" if where else "") for r, _, where in parts)
