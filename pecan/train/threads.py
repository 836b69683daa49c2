"""How many intra-op threads a rank uses, and whether it got the CPU those threads asked for.

Threads: ``train.intra_op_threads`` when set; else ``OMP_NUM_THREADS``/``MKL_NUM_THREADS`` when the
environment sets them; else the rank's share of the node's physical cores minus its loader workers (at
least one). The CPU share is this process's CPU time over wall time x threads for one epoch: on a node
where other work runs (or under a CPU mask narrower than the thread count) it drops, every phase slows
and nothing else in the report says why.
"""

from __future__ import annotations

import dataclasses
import logging
import time

import torch

from pecan.report import is_starved
from pecan.train.distributed import ThreadPlan, plan_threads

log = logging.getLogger(__name__)


def size_threads(config, env) -> ThreadPlan:
    """Apply the thread plan for this rank (see the module docstring) and log it on rank 0."""
    data = config.data
    plan = plan_threads(env.local_world_size, data.num_workers, data.io_mode)
    if config.train.intra_op_threads > 0:
        plan = dataclasses.replace(plan, intra_op_threads=config.train.intra_op_threads, source="config")
    if plan.source in ("cores", "config"):
        torch.set_num_threads(plan.intra_op_threads)
    if env.is_main:
        origin = {"env": "from the environment", "cores": "sized to the cores", "config": "train.intra_op_threads"}[
            plan.source
        ]
        log.info(
            "threads: %d intra-op (%s), %d loader workers per rank, %d physical cores per rank",
            torch.get_num_threads(),
            origin,
            plan.num_workers,
            plan.cores_per_rank,
        )
    return plan


class CpuClock:
    """Process CPU seconds and wall seconds since ``start``; ``share`` is CPU / (wall x threads)."""

    def __init__(self) -> None:
        self.start()

    def start(self) -> None:
        """Start a new interval (an epoch)."""
        self.cpu0, self.wall0 = time.process_time(), time.perf_counter()

    def share(self, threads: int | None = None) -> float:
        """CPU time this process got since ``start``, as a share of wall time x ``threads`` (default: torch's
        intra-op threads). Loader workers are other processes and are not counted."""
        threads = threads or torch.get_num_threads()
        wall = max(time.perf_counter() - self.wall0, 1e-9)
        return (time.process_time() - self.cpu0) / (wall * max(threads, 1))


def starved_advice(record: dict) -> str | None:
    """When the least-served rank was starved of CPU (``report.is_starved``): the warning and the thread
    setting to try; else None."""
    if not is_starved(record):
        return None
    share = record["cpu_share_min"]
    threads = int(record.get("intra_op_threads") or 1)
    fewer = max(1, int(threads * share))
    hint = (
        f"set OMP_NUM_THREADS={fewer} or train.intra_op_threads={fewer}"
        if threads > 1
        else "the node is busy with other work: ask the scheduler for whole cores (e.g. --exclusive)"
    )
    return (
        f"rank {record.get('cpu_share_min_rank', 0)} got {share:.0%} of the CPU its {threads} intra-op "
        f"thread(s) asked for in epoch {record.get('epoch')} (other work on these cores, or fewer cores "
        f"than threads): {hint}"
    )
