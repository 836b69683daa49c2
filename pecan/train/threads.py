"""How many intra-op threads a rank uses, and whether it got the CPU those threads asked for.

Threads: ``train.intra_op_threads`` when set; else ``OMP_NUM_THREADS``/``MKL_NUM_THREADS`` when the
environment sets them; else the rank's share of the node's physical cores minus its loader workers (at
least one), and no more than the rank's share of the CPUs the load average leaves idle. The CPU share is
this process's CPU time over wall time x threads for one epoch: on a node where other work runs (or under a
CPU mask narrower than the thread count) it drops, every phase slows and nothing else in the report says why.

Why sized threads give way to other work: torch's OpenMP threads spin at every barrier waiting for the
slowest, so a thread that shares its core with another process stalls all of them. benchmarks/bench_threads.py
measures it: on 2 cores with other work running, 2 threads trained the demo model several times slower than 1.
So a start on a loaded node takes fewer threads, and an automatically sized run whose epoch was starved of
CPU lowers its threads for the next epochs (``after_epoch``). An explicit count (the config, the environment)
is kept, and so is the cores' count under ``train.deterministic`` (results depend on the thread count).
"""

from __future__ import annotations

import dataclasses
import logging
import os
import time

import torch

from pecan.engine.distributed import ThreadPlan, plan_threads
from pecan.report import is_starved

log = logging.getLogger(__name__)


def size_threads(config, env, load: float | None = None) -> ThreadPlan:
    """Apply the thread plan for this rank (see the module docstring) and log it on rank 0; ``load``: the
    node's 1-minute load average (default: read now)."""
    data = config.data
    plan = plan_threads(env.local_world_size, data.num_workers, data.io_mode)
    note = ""
    if config.train.intra_op_threads > 0:
        plan = dataclasses.replace(plan, intra_op_threads=config.train.intra_op_threads, source="config")
    elif plan.source == "cores" and not config.train.deterministic:  # a deterministic run's count is its own
        load = os.getloadavg()[0] if load is None else load
        fitted = fit_to_load(plan, load, os.cpu_count() or 1, env.local_world_size)
        if fitted.intra_op_threads < plan.intra_op_threads:
            note = f"; {plan.intra_op_threads} would fit the cores, but the load average {load:.1f} shows other work"
        plan = fitted
    if plan.source in ("cores", "config"):
        torch.set_num_threads(plan.intra_op_threads)
    if env.is_main:
        origin = {"env": "from the environment", "cores": "sized to the cores", "config": "train.intra_op_threads"}[
            plan.source
        ]
        log.info(
            "threads: %d intra-op (%s%s), %d loader workers per rank, %d physical cores per rank",
            torch.get_num_threads(),
            origin,
            note,
            plan.num_workers,
            plan.cores_per_rank,
        )
    return plan


def fit_to_load(plan: ThreadPlan, load: float, cpus: int, local_world_size: int) -> ThreadPlan:
    """``plan`` with no more intra-op threads than the rank's share of the CPUs the load average leaves idle
    (rounded, less its loader workers, at least one)."""
    idle = round((cpus - load) / max(local_world_size, 1)) - plan.num_workers
    return dataclasses.replace(plan, intra_op_threads=max(1, min(plan.intra_op_threads, idle)))


def after_epoch(plan: ThreadPlan, record: dict, deterministic: bool, is_main: bool) -> ThreadPlan:
    """After an epoch whose least-served rank was starved of CPU (``report.is_starved``): automatically sized
    threads drop to what that rank got, for the next epochs, on every rank (each reads the same record)."""
    threads = torch.get_num_threads()
    if plan.source != "cores" or deterministic or threads <= 1 or not is_starved(record):
        return plan
    fewer = max(1, int(threads * record["cpu_share_min"]))
    torch.set_num_threads(fewer)
    if is_main:
        log.warning(
            "intra-op threads lowered from %d to %d per rank for the next epochs: rank %s got %.0f%% of the CPU "
            "its threads asked for in epoch %s (other work on these cores); set train.intra_op_threads to keep "
            "a count",
            threads,
            fewer,
            record.get("cpu_share_min_rank", 0),
            100 * record["cpu_share_min"],
            record.get("epoch"),
        )
    return dataclasses.replace(plan, intra_op_threads=fewer)


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
