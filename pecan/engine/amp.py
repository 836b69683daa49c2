"""Mixed precision: the one autocast choice that training, evaluation and `pecan score` share."""

from __future__ import annotations

from contextlib import nullcontext

import torch


def amp_context(device: torch.device, amp: str):
    """bf16 autocast on CPU or CUDA, or a null context; bf16 needs no GradScaler."""
    if amp == "bf16":
        return torch.autocast(device_type=device.type, dtype=torch.bfloat16)
    return nullcontext()
