"""Where this process sits in a multi-rank job, and joining the process group.

``discover()`` reads the launcher's environment (torchrun, Slurm ``srun``, flux ``run``, or none)
into a ``DistEnv``. The master address it returns is derived only from values that are identical on
every rank (the job's node list or an address exported once by the launch script), never from this
host's name: ranks that disagree on the master wait on each other forever without a word.
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

DEFAULT_MASTER_PORT = 29500
SINGLE_HOST = "127.0.0.1"


@dataclass(frozen=True)
class DistEnv:
    """Where this process sits in the job."""

    rank: int
    local_rank: int
    world_size: int
    local_world_size: int
    master_addr: str
    master_port: int
    launcher: str  # "torchrun" | "slurm" | "flux" | "single"

    @property
    def is_distributed(self) -> bool:
        """True when more than one rank takes part."""
        return self.world_size > 1

    @property
    def is_main(self) -> bool:
        """True on global rank 0, the rank that logs and writes checkpoints."""
        return self.rank == 0


# ---------------------------------------------------------------------------------------------
# Discovery
# ---------------------------------------------------------------------------------------------


def _int_var(environ: Mapping[str, str], name: str) -> int:
    """Read a required integer variable, naming it when it is missing or malformed."""
    if name not in environ:
        raise ValueError(f"environment variable {name} is required but not set")
    try:
        return int(environ[name].strip())
    except ValueError:
        raise ValueError(f"environment variable {name}={environ[name]!r} is not an integer") from None


def _optional_int_var(environ: Mapping[str, str], name: str) -> Optional[int]:
    """Read an optional integer variable; present-but-malformed is still an error."""
    return _int_var(environ, name) if environ.get(name, "").strip() else None


def _master_port(environ: Mapping[str, str], default: int) -> int:
    """PECAN_MASTER_PORT, then MASTER_PORT, then the launcher's default."""
    for name in ("PECAN_MASTER_PORT", "MASTER_PORT"):
        port = _optional_int_var(environ, name)
        if port is not None:
            if not 0 < port < 65536:
                raise ValueError(f"environment variable {name}={port} is not a TCP port")
            return port
    return default


def _torchrun_env(environ: Mapping[str, str]) -> DistEnv:
    """torchrun exports everything, including the master it rendezvoused on."""
    world_size = _int_var(environ, "WORLD_SIZE")
    return DistEnv(
        rank=_int_var(environ, "RANK"),
        local_rank=_int_var(environ, "LOCAL_RANK"),
        world_size=world_size,
        local_world_size=_optional_int_var(environ, "LOCAL_WORLD_SIZE") or world_size,
        master_addr=environ.get("PECAN_MASTER_ADDR") or environ.get("MASTER_ADDR") or SINGLE_HOST,
        master_port=_master_port(environ, DEFAULT_MASTER_PORT),
        launcher="torchrun",
    )


def _slurm_local_world_size(environ: Mapping[str, str]) -> int:
    """Tasks on this node: the step's layout first, since a step may use part of the allocation."""
    node_id = _optional_int_var(environ, "SLURM_NODEID") or 0
    for name in ("SLURM_STEP_TASKS_PER_NODE", "SLURM_NTASKS_PER_NODE", "SLURM_TASKS_PER_NODE"):
        if environ.get(name, "").strip():
            counts = _expand_tasks_per_node(environ[name], name)
            # SLURM_NTASKS_PER_NODE is one number for every node; the others list each node.
            return counts[min(node_id, len(counts) - 1)] if len(counts) > 1 else counts[0]
    return 1


def _slurm_env(environ: Mapping[str, str]) -> DistEnv:
    """srun tasks: rank 0 runs on the first node of the step, so that node is the master."""
    # The step's own values win: `srun -N2` inside a 4-node allocation runs on the step's nodes.
    size_name = "SLURM_STEP_NUM_TASKS" if environ.get("SLURM_STEP_NUM_TASKS") else "SLURM_NTASKS"
    master = environ.get("PECAN_MASTER_ADDR")
    if not master:
        for name in ("SLURM_STEP_NODELIST", "SLURM_JOB_NODELIST", "SLURM_NODELIST"):
            if environ.get(name, "").strip():
                master = expand_hostlist(environ[name])[0]
                break
    world_size = _int_var(environ, size_name) if size_name in environ else 1
    if not master:
        if world_size > 1:
            raise ValueError("environment variable SLURM_JOB_NODELIST is required for a multi-task Slurm step")
        master = SINGLE_HOST
    # A port derived from the job id is the same on every rank and differs between jobs sharing a node.
    job_id = _optional_int_var(environ, "SLURM_JOB_ID")
    default_port = DEFAULT_MASTER_PORT if job_id is None else 20000 + job_id % 20000
    return DistEnv(
        rank=_int_var(environ, "SLURM_PROCID"),
        local_rank=_int_var(environ, "SLURM_LOCALID"),
        world_size=world_size,
        local_world_size=_slurm_local_world_size(environ),
        master_addr=master,
        master_port=_master_port(environ, default_port),
        launcher="slurm",
    )


def _flux_world_size(environ: Mapping[str, str]) -> int:
    """FLUX_JOB_SIZE (tasks in the job) and the launch script's PECAN_WORLD_SIZE must agree."""
    flux_size = _optional_int_var(environ, "FLUX_JOB_SIZE")
    script_size = _optional_int_var(environ, "PECAN_WORLD_SIZE")
    if flux_size is not None and script_size is not None and flux_size != script_size:
        raise ValueError(
            f"environment variable PECAN_WORLD_SIZE={script_size} disagrees with "
            f"FLUX_JOB_SIZE={flux_size}; unset the stale one"
        )
    if flux_size is None and script_size is None:
        raise ValueError("environment variable FLUX_JOB_SIZE (or PECAN_WORLD_SIZE) is required under flux")
    return flux_size if flux_size is not None else script_size  # type: ignore[return-value]


def _flux_env(environ: Mapping[str, str]) -> DistEnv:
    """flux tasks: the master is exported once by the launch script (flux sets no node list)."""
    world_size = _flux_world_size(environ)
    local_world_size = _optional_int_var(environ, "PECAN_LOCAL_WORLD_SIZE")
    nnodes = _optional_int_var(environ, "FLUX_JOB_NNODES")
    if local_world_size is None:
        local_world_size = world_size // nnodes if nnodes and world_size % nnodes == 0 else world_size
    master = environ.get("PECAN_MASTER_ADDR")
    if not master:
        # Guessing here (own hostname, FLUX_URI) is what makes ranks disagree and hang.
        if world_size > 1:
            raise ValueError(
                "environment variable PECAN_MASTER_ADDR is required for a multi-task flux job; "
                "launch with scripts/launch_flux.sh or export the job's first node"
            )
        master = SINGLE_HOST
    return DistEnv(
        rank=_int_var(environ, "FLUX_TASK_RANK"),
        local_rank=_int_var(environ, "FLUX_TASK_LOCAL_ID"),
        world_size=world_size,
        local_world_size=local_world_size,
        master_addr=master,
        master_port=_master_port(environ, DEFAULT_MASTER_PORT),
        launcher="flux",
    )


def _single_env(environ: Mapping[str, str]) -> DistEnv:
    """No launcher: one process, talking to itself."""
    return DistEnv(
        rank=0,
        local_rank=0,
        world_size=1,
        local_world_size=1,
        master_addr=environ.get("PECAN_MASTER_ADDR") or SINGLE_HOST,
        master_port=_master_port(environ, DEFAULT_MASTER_PORT),
        launcher="single",
    )


def _check(env: DistEnv) -> DistEnv:
    """Reject layouts no launcher produces, so a bad environment fails before the rendezvous."""
    if env.world_size < 1 or env.local_world_size < 1:
        raise ValueError(
            f"world size {env.world_size} / local world size {env.local_world_size} from {env.launcher} must be >= 1"
        )
    if not 0 <= env.rank < env.world_size:
        raise ValueError(f"rank {env.rank} from {env.launcher} is outside world size {env.world_size}")
    if not 0 <= env.local_rank < env.local_world_size:
        raise ValueError(
            f"local rank {env.local_rank} from {env.launcher} is outside local world size {env.local_world_size}"
        )
    return env


_TORCHRUN_VARS = ("RANK", "WORLD_SIZE", "LOCAL_RANK")


def discover(environ: Mapping[str, str] | None = None) -> DistEnv:
    """Read this process's place in the job from torchrun, Slurm, flux, or default to one process."""
    environ = os.environ if environ is None else environ
    present = [name for name in _TORCHRUN_VARS if name in environ]
    if present:
        # A partial torchrun environment is a mistake, not a reason to fall through to Slurm.
        for name in _TORCHRUN_VARS:
            if name not in environ:
                raise ValueError(f"environment variable {name} is required when {', '.join(present)} is set")
        return _check(_torchrun_env(environ))
    if "SLURM_PROCID" in environ:
        return _check(_slurm_env(environ))
    if "FLUX_TASK_RANK" in environ:
        return _check(_flux_env(environ))
    return _single_env(environ)


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
