"""Joining the process group, the rank's device, and thread planning.

Where this process sits in the job (``DistEnv``, ``discover()``) is read in ``pecan.engine.launchers``
(no torch import) and re-exported here.
"""

from __future__ import annotations

import datetime
import os
import time
from dataclasses import dataclass
from typing import Mapping, Optional

import psutil
import torch
import torch.distributed as dist

from pecan.data import io_modes
from pecan.engine.hostlist import _expand_tasks_per_node, expand_hostlist  # noqa: F401 (public here)
from pecan.engine.launchers import DEFAULT_MASTER_PORT, SINGLE_HOST, DistEnv, discover  # noqa: F401 (public here)

# ---------------------------------------------------------------------------------------------
# Process group
# ---------------------------------------------------------------------------------------------


def default_backend(cuda_available: bool | None = None) -> str:
    """Return "nccl" when CUDA is usable, else "gloo"."""
    if cuda_available is None:
        cuda_available = torch.cuda.is_available()
    return "nccl" if cuda_available else "gloo"


def _pick_device(env: DistEnv) -> torch.device:
    """cuda:local_rank, or cuda:0 when the launcher already narrowed CUDA_VISIBLE_DEVICES per task."""
    if not torch.cuda.is_available():
        return torch.device("cpu")
    # `flux run -g1` and `srun --gpus-per-task=1` leave each task one visible GPU, numbered 0.
    index = env.local_rank % torch.cuda.device_count()
    torch.cuda.set_device(index)
    return torch.device("cuda", index)


def _export_rendezvous(env: DistEnv) -> None:
    """Make the env:// rendezvous and libraries that read these variables see DistEnv's values."""
    values = {
        "MASTER_ADDR": env.master_addr,
        "MASTER_PORT": str(env.master_port),
        "RANK": str(env.rank),
        "WORLD_SIZE": str(env.world_size),
        "LOCAL_RANK": str(env.local_rank),
        "LOCAL_WORLD_SIZE": str(env.local_world_size),
    }
    for name, value in values.items():
        # Set when absent; overwrite a disagreeing value (e.g. a PECAN_MASTER_ADDR override) so the
        # announced master and the one the process group dials are the same.
        if os.environ.get(name) != value:
            os.environ[name] = value


def init_distributed(env: DistEnv, backend: str | None = None, timeout_s: float = 1800) -> torch.device:
    """Join the process group when there is more than one rank and return this rank's device."""
    _export_rendezvous(env)
    device = _pick_device(env)
    backend = backend or default_backend(device.type == "cuda")
    if env.is_distributed and not dist.is_initialized():
        try:
            dist.init_process_group(
                backend=backend,
                init_method="env://",
                rank=env.rank,
                world_size=env.world_size,
                timeout=datetime.timedelta(seconds=timeout_s),
            )
        except (RuntimeError, dist.DistError) as err:
            from pecan.runtime.errors import CollectiveFailed

            first = (str(err).strip().splitlines() or [type(err).__name__])[0][:300]
            raise CollectiveFailed(
                f"collective rendezvous (init_process_group at {env.master_addr}:"
                f"{env.master_port}) failed on rank {env.rank}: {first}. Not every rank arrived "
                f"within train.collective_timeout_s ({timeout_s:g} s); rerun the same command "
                "to resume"
            ) from err
    shown_backend = backend if env.is_distributed else "none"
    print(
        f"[pecan] rank {env.rank}/{env.world_size} (local {env.local_rank}) joined via {env.launcher}, "
        f"master {env.master_addr}:{env.master_port}, backend {shown_backend}, device {device}",
        flush=True,
    )
    return device


def cleanup_distributed(graceful: bool = True) -> None:
    """Destroy the process group if one was created.

    After a successful run a last barrier ensures no collective is still in flight. After a failure there
    is no barrier: the other ranks may be blocked elsewhere, and waiting for them would hide the error.
    """
    if dist.is_available() and dist.is_initialized():
        import gc

        gc.collect()
        if graceful:
            barrier()
        dist.destroy_process_group()


# ---------------------------------------------------------------------------------------------
# Collectives live in pecan.runtime.collectives (data uses them too); re-exported here for the trainer.
# ---------------------------------------------------------------------------------------------


def resolve_device(setting: str, discovered: torch.device, local_rank: int) -> torch.device:
    """train.device: auto keeps what distributed setup chose; a bare 'cuda' means this rank's GPU."""
    if setting == "auto":
        return discovered
    if setting == "cuda":
        return torch.device("cuda", local_rank % max(torch.cuda.device_count(), 1))
    return torch.device(setting)


from pecan.runtime.collectives import all_reduce, all_reduce_sum, barrier, broadcast_object, gather_varlen  # noqa: E402,F401


class GradCommClock:
    """A DDP communication hook that notes when each gradient bucket is ready, so the backward time
    after the last bucket (the wait for its all-reduce) can be told apart from backward compute.

    DDP launches a bucket's all-reduce as soon as its gradients are ready and ``backward()`` returns only
    when every all-reduce has finished; the time from the last bucket ready to the end of ``backward()``
    is the exposed communication wait. On CPU this is exact on the host clock; on CUDA the host runs
    ahead of the device, so the figure is not used there (see ``exposed_wait``).
    """

    def __init__(self) -> None:
        self.last_ready: Optional[float] = None

    def hook(self, state, bucket):  # no annotations: DDP checks them against dist.GradBucket
        """The hook: record the time, then the default all-reduce (average) of the bucket."""
        from torch.distributed.algorithms.ddp_comm_hooks import default_hooks

        self.last_ready = time.perf_counter()
        return default_hooks.allreduce_hook(state, bucket)

    def exposed_wait(self, backward_end: float) -> float:
        """Seconds between the last bucket ready and the end of backward (0 without DDP); resets."""
        ready, self.last_ready = self.last_ready, None
        return max(backward_end - ready, 0.0) if ready is not None else 0.0


# ---------------------------------------------------------------------------------------------
# CPU sizing
# ---------------------------------------------------------------------------------------------


def _allowed_cpus() -> Optional[set[int]]:
    """Logical CPUs this process may run on (Slurm/flux bind tasks), or None when unknown."""
    try:
        return set(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return None


def _count_physical_cores(cpuinfo: str, allowed: Optional[set[int]]) -> int:
    """Distinct (physical id, core id) pairs among the allowed processors; 0 when cpuinfo lacks them."""
    cores: set[tuple[str, str]] = set()
    for block in cpuinfo.strip().split("\n\n"):
        fields = {}
        for line in block.splitlines():
            key, sep, value = line.partition(":")
            if sep:
                fields[key.strip()] = value.strip()
        if "processor" not in fields or "core id" not in fields:
            continue
        if allowed is not None and fields["processor"].isdigit() and int(fields["processor"]) not in allowed:
            continue
        cores.add((fields.get("physical id", "0"), fields["core id"]))
    return len(cores)


def physical_cores() -> int:
    """Physical cores (not hyperthreads) this process may use, falling back to its logical CPUs."""
    allowed = _allowed_cpus()
    if allowed is None or len(allowed) >= (psutil.cpu_count(logical=True) or 0):
        count = psutil.cpu_count(logical=False) or 0  # the whole machine's, from the kernel's topology
    else:
        # Bound to part of the machine (binding, taskset, cpuset): the allowed CPUs' cores, from /proc/cpuinfo.
        try:
            with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as handle:
                count = _count_physical_cores(handle.read(), allowed)
        except OSError:
            count = 0
    if count == 0:
        # No topology (some ARM and VM kernels): each allowed logical CPU counts as a core.
        count = len(allowed) if allowed else (os.cpu_count() or 1)
    return max(1, min(count, os.cpu_count() or count))


def loader_workers_per_rank(local_world_size: int, reserve: int = 1) -> int:
    """DataLoader workers per rank: this node's physical cores split over its ranks, less ``reserve``.

    Each rank keeps ``reserve`` cores for its own main process (the training loop and, on GPU, the
    CUDA launch thread); hyperthreads are not counted because decode work saturates a core. Returns
    0 (load in the main process) when a rank's share is no larger than ``reserve``. The ranks of a node
    are assumed to share one CPU set (torchrun, flux's default ``cpu-affinity=on``, ``srun
    --cpu-bind=none``); when each task is bound to its own cores, pass ``local_world_size=1``.
    """
    if local_world_size < 1:
        raise ValueError(f"local_world_size must be >= 1, got {local_world_size}")
    return max(0, physical_cores() // local_world_size - reserve)


THREAD_ENV = ("OMP_NUM_THREADS", "MKL_NUM_THREADS")


@dataclass(frozen=True)
class ThreadPlan:
    """Intra-op threads and loader workers of one rank, and where the thread count came from."""

    intra_op_threads: int
    num_workers: int
    cores_per_rank: int
    source: str  # "env" (OMP_NUM_THREADS/MKL_NUM_THREADS set) or "cores"


def threads_from_environment(default: int, environ: Mapping[str, str] | None = None) -> int:
    """torch's intra-op thread count when the environment sets one (``THREAD_ENV``), else ``default``."""
    named = any((os.environ if environ is None else environ).get(name, "").strip() for name in THREAD_ENV)
    return torch.get_num_threads() if named else default


def plan_threads(
    local_world_size: int, num_workers: int, io_mode: str, environ: Mapping[str, str] | None = None
) -> ThreadPlan:
    """Size intra-op threads and loader workers so together they fit this rank's physical cores.

    ``num_workers < 0`` means automatic (none for packed data, else the cores left after the main
    process). Without a thread count in the environment the main process gets the cores the workers
    leave, at least one: oversubscribed cores make every phase slower while the data wait looks small.
    """
    share = max(1, physical_cores() // max(local_world_size, 1))
    if num_workers < 0:
        num_workers = io_modes.auto_workers(io_mode, loader_workers_per_rank(local_world_size))
    if threads_from_environment(0, environ):
        return ThreadPlan(torch.get_num_threads(), num_workers, share, "env")
    return ThreadPlan(max(1, share - num_workers), num_workers, share, "cores")
