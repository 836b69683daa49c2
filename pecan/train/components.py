"""What the trainer applies from outside the model (torchtitan's pattern): the AMP context, torch.compile,
DDP wrapping, seeding and the learning-rate schedule. The model knows none of them."""

from __future__ import annotations

import logging
import math
import random
from contextlib import nullcontext
from typing import Any

import numpy as np
import torch

from pecan.train.distributed import DistEnv, gather_varlen

log = logging.getLogger(__name__)


def amp_context(device: torch.device, amp: str):
    """bf16 autocast on CPU or CUDA, or a null context; bf16 needs no GradScaler."""
    if amp == "bf16":
        return torch.autocast(device_type=device.type, dtype=torch.bfloat16)
    return nullcontext()


def apply_compile(model: torch.nn.Module, enabled: bool) -> torch.nn.Module:
    """torch.compile with dynamic shapes (graph sizes vary per batch); applied before DDP wrapping."""
    if not enabled:
        return model
    return torch.compile(model, dynamic=True)


def wrap_ddp(model: torch.nn.Module, env: DistEnv, device: torch.device) -> torch.nn.Module:
    """DistributedDataParallel when the job has more than one rank."""
    if not env.is_distributed:
        return model
    device_ids = [device.index] if device.type == "cuda" else None
    return torch.nn.parallel.DistributedDataParallel(model, device_ids=device_ids)


def seed_everything(seed: int, deterministic: bool) -> None:
    """Seed Python, NumPy and torch; optionally demand deterministic kernels."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    if deterministic:
        torch.use_deterministic_algorithms(True, warn_only=True)


def cosine_schedule(total_steps: int, warmup_steps: int, floor: float = 0.05):
    """Linear warm-up, then cosine decay to ``floor`` times the peak learning rate."""

    def factor(step: int) -> float:
        if warmup_steps and step < warmup_steps:
            return (step + 1) / warmup_steps
        progress = min((step - warmup_steps) / max(total_steps - warmup_steps, 1), 1.0)
        return floor + (1 - floor) * 0.5 * (1 + math.cos(math.pi * progress))

    return factor


@torch.no_grad()
def weights_in_sync(model: torch.nn.Module, env: DistEnv, device: torch.device) -> dict[str, Any]:
    """A checksum of the weights on every rank; ranks that disagree ran different code or lost sync."""
    checksum = torch.zeros(1, dtype=torch.float64, device=device)
    for index, parameter in enumerate(model.parameters()):
        checksum += (parameter.double() * (1.0 + 1e-3 * index)).sum()
    sums = gather_varlen(checksum, env, what="weights").cpu().tolist()
    in_sync = all(value == sums[0] for value in sums)
    if not in_sync and env.is_main:
        log.error("model weights differ between ranks: %s", sums)
    return {"weights_checksum": sums[0], "ranks_in_sync": in_sync}
