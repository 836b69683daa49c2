"""What the trainer applies from outside the model (torchtitan's pattern): the AMP context, torch.compile,
DDP wrapping, seeding and the learning-rate schedule. The model knows none of them."""

from __future__ import annotations

import dataclasses
import logging
import math
import random
from typing import Any

import numpy as np
import torch

from pecan.engine.distributed import DistEnv, gather_varlen
from pecan.runtime.errors import RanksDisagree

log = logging.getLogger(__name__)


def apply_compile(model: torch.nn.Module, enabled: bool, backend: str = "inductor") -> torch.nn.Module:
    """torch.compile with dynamic shapes (graph sizes vary per batch); applied before DDP wrapping.

    The model's float settings (cutoff, Gaussian widths, dropout, the underflow floor) are constants of a
    run, so floats are specialised: traced as symbolic inputs instead, one of them cannot be turned into a
    tensor and dynamo traces the whole model a second time (about 2 s more per graph on CPU). The setting
    is process-wide; PECAN's processes compile nothing else."""
    if not enabled:
        return model
    torch._dynamo.config.specialize_float = True
    return torch.compile(model, dynamic=True, backend=backend)


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


@dataclasses.dataclass
class CosineSchedule:
    """Linear warm-up, then cosine decay to ``floor`` times the peak learning rate, over ``total_steps``.

    A resumed run whose length differs from the checkpoint's (``extended``) keeps the steps before
    ``anchor_step`` as they were and, from there, either anneals from the factor it had reached
    (``anchor_factor``) to the floor over the steps left, or (``restart``) warms up and decays again from
    the peak: a warm restart. A callable object, so LambdaLR's state_dict carries these fields into the
    checkpoint and a later resume knows the schedule it continues."""

    total_steps: int
    warmup_steps: int
    floor: float = 0.05
    anchor_step: int = -1  # -1: the plain schedule
    anchor_factor: float = 1.0
    restart: bool = False
    first_total: int = -1  # the length of the first schedule, for the steps before the anchor

    def __call__(self, step: int) -> float:
        if self.anchor_step < 0 or step < self.anchor_step:
            first_total = self.total_steps if self.first_total < 0 else self.first_total
            return self._cosine(step, first_total, 1.0, self.warmup_steps)
        into, span = step - self.anchor_step, self.total_steps - self.anchor_step
        if self.restart:
            return self._cosine(into, span, 1.0, self.warmup_steps)
        return self._cosine(into, span, self.anchor_factor, 0)

    def _cosine(self, step: int, total: int, start: float, warmup: int) -> float:
        if warmup and step < warmup:
            return start * (step + 1) / warmup
        progress = min((step - warmup) / max(total - warmup, 1), 1.0)
        return self.floor + (start - self.floor) * 0.5 * (1 + math.cos(math.pi * progress))

    def extended(self, step: int, total_steps: int, restart: bool) -> "CosineSchedule":
        """This schedule resumed at ``step`` in a run that now ends after ``total_steps`` steps."""
        first_total = self.total_steps if self.anchor_step < 0 else self.first_total
        return dataclasses.replace(
            self,
            total_steps=total_steps,
            anchor_step=step,
            anchor_factor=self(step),
            restart=restart,
            first_total=first_total,
        )


def cosine_schedule(total_steps: int, warmup_steps: int, floor: float = 0.05) -> CosineSchedule:
    """Linear warm-up, then cosine decay to ``floor`` times the peak learning rate."""
    return CosineSchedule(total_steps, warmup_steps, floor)


@torch.no_grad()
def weights_in_sync(model: torch.nn.Module, env: DistEnv, device: torch.device) -> dict[str, Any]:
    """A checksum of the weights on every rank; ranks that disagree ran different code or lost sync, and
    the run stops (RanksDisagree naming them) before a checkpoint of either rank's weights is written."""
    checksum = torch.zeros(1, dtype=torch.float64, device=device)
    for index, parameter in enumerate(model.parameters()):
        checksum += (parameter.double() * (1.0 + 1e-3 * index)).sum()
    sums = gather_varlen(checksum, env, what="weights").cpu().tolist()
    sums = [value[0] if isinstance(value, list) else value for value in sums]
    differ = [rank for rank, value in enumerate(sums) if not _same_float(value, sums[0])]
    if differ:
        raise RanksDisagree(
            f"model weights differ between ranks: rank(s) {', '.join(map(str, differ))} disagree with rank 0 "
            f"(weight checksums {', '.join(f'rank {r} {v!r}' for r, v in enumerate(sums))}); the ranks ran "
            "different code or settings, or lost sync: stopping before a checkpoint is written"
        )
    return {"weights_checksum": sums[0], "ranks_in_sync": True}


def _same_float(a: float, b: float) -> bool:
    return a == b or (math.isnan(a) and math.isnan(b))


def flat_settings(config) -> dict[str, Any]:
    """``section.key: value`` of every resolved config key."""
    return {f"{section}.{key}": value for section, values in config.to_dict().items() for key, value in values.items()}


def check_same_config(config, env: DistEnv) -> None:
    """Every rank started with the same resolved config (one all-gather of digest and settings); ranks
    started with different settings (a ``--set`` on one rank, another config file) are a ConfigError naming
    the ranks and the keys that differ, on every rank, before anything is written."""
    if not env.is_distributed:
        return
    from pecan.runtime.collectives import all_gather_object
    from pecan.runtime.errors import ConfigError

    gathered = all_gather_object((config.digest(), flat_settings(config)), what="config_digest")
    differ = [rank for rank, (digest, _) in enumerate(gathered) if digest != gathered[0][0]]
    if not differ:
        return
    first, theirs = gathered[0][1], gathered[differ[0]][1]
    keys = sorted(k for k in set(first) | set(theirs) if first.get(k) != theirs.get(k))
    shown = "; ".join(f"{k}: rank 0 {first.get(k)!r}, rank {differ[0]} {theirs.get(k)!r}" for k in keys[:8])
    raise ConfigError(
        f"the ranks started with different settings: rank(s) {', '.join(map(str, differ))} differ from rank 0 "
        f"(config digest {gathered[differ[0]][0]} vs {gathered[0][0]}): {shown}; start every rank with the same "
        "config file and --set options"
    )
