"""Every collective PECAN runs, each traced as a dftracer ``comm`` event, in one leaf module.

Data, scoring and training all use these (data may not import train). Each helper is a no-op without a
process group. A collective that fails (a peer died, or did not arrive within train.collective_timeout_s)
raises ``CollectiveFailed`` naming the collective, this rank, the peers that stopped answering when that
can be told, and that rerunning the same command resumes the run.
"""

from __future__ import annotations

import contextlib
from typing import Any, Callable, Iterator, Optional

import torch
import torch.distributed as dist

from pecan.runtime import tracing
from pecan.runtime.errors import CollectiveFailed

# Set by the trainer once the process group is up: a callable naming the ranks that went away, for messages.
_lost_peers: Optional[Callable[[], str]] = None


def set_peer_reporter(reporter: Optional[Callable[[], str]]) -> None:
    """Register what names the lost peers in a failed collective's message (see pecan.train.peers)."""
    global _lost_peers
    _lost_peers = reporter


def active() -> bool:
    """True when a process group with more than one rank is up."""
    return dist.is_available() and dist.is_initialized() and dist.get_world_size() > 1


def describe_failure(op: str, what: str, err: BaseException) -> str:
    """The message of a failed collective: which, on which rank, who went away, and what to do."""
    rank = dist.get_rank() if dist.is_initialized() else 0
    first = (str(err).strip().splitlines() or [type(err).__name__])[0][:300]
    lost = ""
    if _lost_peers is not None:
        try:
            lost = _lost_peers()
        except Exception:  # noqa: BLE001 - the store may be gone with the peer; the message still helps
            lost = "rank 0 (it hosts the rendezvous store, which no longer answers)"
    peers = f"; lost: {lost}" if lost else ""
    return (
        f"collective {op}{f' ({what})' if what else ''} failed on rank {rank}{peers}: {first}. A peer died "
        "or did not arrive within train.collective_timeout_s; the checkpoints are intact: rerun the same "
        "command to resume"
    )


@contextlib.contextmanager
def _collective(op: str, what: str, **fields: Any) -> Iterator[None]:
    """Trace the collective and turn a backend failure into CollectiveFailed."""
    with tracing.span("comm", op, what=what, **fields):
        try:
            yield
        except CollectiveFailed:
            raise
        except (RuntimeError, dist.DistError) as err:
            raise CollectiveFailed(describe_failure(op, what, err)) from err


# Words of gloo's and NCCL's errors when a peer is gone or late (DDP raises them from backward).
_COMM_WORDS = ("connection", "timed out", "timeout", "gloo", "nccl", "peer", "broken pipe")


@contextlib.contextmanager
def guarded(op: str, what: str = "") -> Iterator[None]:
    """The same failure naming for a collective run elsewhere (DDP's gradient all-reduce in backward);
    other errors pass unchanged, and nothing is traced here."""
    try:
        yield
    except (RuntimeError, dist.DistError) as err:
        if isinstance(err, CollectiveFailed) or not active():
            raise
        if not (isinstance(err, dist.DistError) or any(w in str(err).lower() for w in _COMM_WORDS)):
            raise
        raise CollectiveFailed(describe_failure(op, what, err)) from err


def barrier(what: str = "") -> None:
    """Wait for every rank; a no-op without a process group."""
    if not (dist.is_available() and dist.is_initialized()):
        return
    with _collective("barrier", what):
        if dist.get_backend() == "nccl":
            # Name the device: NCCL otherwise guesses from the rank and can pick another rank's GPU.
            dist.barrier(device_ids=[torch.cuda.current_device()])
        else:
            dist.barrier()


def gather_varlen(tensor: torch.Tensor, env: Any = None, what: str = "") -> torch.Tensor:
    """Concatenate a 1-D/2-D tensor of any length (0 rows included) from every rank, in rank order."""
    if not active():
        return tensor
    world = dist.get_world_size()
    with _collective("all_gather", what, rows=int(tensor.shape[0])):
        size = torch.tensor([tensor.shape[0]], device=tensor.device)
        sizes = [torch.zeros_like(size) for _ in range(world)]
        dist.all_gather(sizes, size)
        longest = int(max(s.item() for s in sizes))
        padded = torch.zeros((longest, *tensor.shape[1:]), dtype=tensor.dtype, device=tensor.device)
        padded[: tensor.shape[0]] = tensor
        pieces = [torch.zeros_like(padded) for _ in range(world)]
        dist.all_gather(pieces, padded)
        return torch.cat([p[: int(s.item())] for p, s in zip(pieces, sizes)])


_OPS = {"sum": "SUM", "max": "MAX", "min": "MIN"}


def all_reduce(tensor: torch.Tensor, op: str = "sum", what: str = "") -> torch.Tensor:
    """Reduce a tensor over ranks in place (``op``: sum, max or min)."""
    if active():
        with _collective("all_reduce", what):
            dist.all_reduce(tensor, op=getattr(dist.ReduceOp, _OPS[op]))
    return tensor


def all_reduce_sum(tensor: torch.Tensor, env: Any = None, what: str = "") -> torch.Tensor:
    """Sum a tensor over ranks (in place when distributed)."""
    return all_reduce(tensor, "sum", what)


def broadcast_object(value: Any, env: Any = None, what: str = "") -> Any:
    """Rank 0's value on every rank."""
    if not active():
        return value
    with _collective("bcast", what):
        box = [value]
        dist.broadcast_object_list(box, src=0)
        return box[0]


def all_gather_object(value: Any, what: str = "") -> list[Any]:
    """Every rank's value, in rank order."""
    if not active():
        return [value]
    gathered: list[Any] = [None] * dist.get_world_size()
    with _collective("all_gather", what):
        dist.all_gather_object(gathered, value)
    return gathered
