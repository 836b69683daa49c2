"""Where this process sits in a multi-rank job, read from its launcher's environment; imports no torch.

``discover()`` reads the launcher's environment (torchrun, Slurm ``srun``, flux ``run``, or none)
into a ``DistEnv``. The master address it returns is derived only from values that are identical on
every rank (the job's node list or an address exported once by the launch script), never from this
host's name: ranks that disagree on the master wait on each other forever without a word.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Mapping, Optional

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
