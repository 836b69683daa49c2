"""A rank's share of a manifest, for the commands that run one job per complex or per shard on many nodes.

Started under torchrun, srun or flux, every rank of `pecan redock` and `pecan convert` reads the same
manifest, makes the same plan and takes the jobs whose position ``k`` in it has ``k % world_size == rank``.
No process group is joined: the ranks meet only through the files in the output directory (each job's own
record, written atomically), so the commands need no ``torch.distributed`` and a rank that is stopped and
started again resumes its own share. What a job writes depends on the job alone, never on the rank that
ran it, so the output is the same for any number of ranks.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence, TypeVar

from pecan.runtime.fileio import json_text, write_text

T = TypeVar("T")


@dataclass(frozen=True)
class Place:
    """This process's rank and the number of ranks; ``launcher`` names where they were read from."""

    rank: int = 0
    world_size: int = 1
    launcher: str = "single"

    @property
    def is_distributed(self) -> bool:
        """More than one rank."""
        return self.world_size > 1

    def describe(self) -> str:
        """``rank 1 of 4 (slurm)``."""
        return f"rank {self.rank} of {self.world_size} ({self.launcher})"


def progress_label(verb: str, place: Place) -> str:
    """What a rank's progress lines start with: ``converting``, or ``converting (rank 1 of 4)`` under several
    ranks, whose lines interleave in one job log."""
    return f"{verb} (rank {place.rank} of {place.world_size})" if place.is_distributed else verb


def share(jobs: Sequence[T], rank: int, world_size: int) -> list[T]:
    """The jobs rank ``rank`` runs: every ``world_size``-th, from position ``rank`` (round-robin over the plan)."""
    return list(jobs[rank::world_size])


def share_lines(names: Sequence[str], world_size: int, unit: str) -> list[str]:
    """One line per rank: how many of the plan's ``unit`` it takes and which (the dry run's output)."""
    lines = []
    for rank in range(world_size):
        mine = share(names, rank, world_size)
        lines.append(f"rank {rank} of {world_size}: {len(mine)} {unit}" + (": " + " ".join(mine) if mine else ""))
    return lines


def remove_leftover_temps(paths: Sequence[Path]) -> list[Path]:
    """Delete the temp files the atomic writer leaves beside ``paths`` when its process is killed (SIGKILL, a
    node lost): a rank calls it for its own share's outputs only, which no other rank writes."""
    removed = []
    for path in paths:
        for temp in path.parent.glob(f".{path.name}.*.tmp"):
            temp.unlink(missing_ok=True)
            removed.append(temp)
    return removed


def rank_file(out_dir: Path, place: Place) -> Path:
    """Where a rank records that it finished its share (and which of its jobs were already done)."""
    return out_dir / ".ranks" / f"rank{place.rank}-of-{place.world_size}.json"


def clear_rank_file(out_dir: Path, place: Place) -> None:
    """At a rank's start: its share is not finished until it says so again."""
    rank_file(out_dir, place).unlink(missing_ok=True)


def write_rank_file(out_dir: Path, place: Place, plan_key: str, reused: Sequence[str]) -> None:
    """A rank's share is finished: the plan it ran and the ids it found already done."""
    path = rank_file(out_dir, place)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text(path, json_text({"plan": plan_key, "reused": sorted(reused)}))


def finished_ranks(out_dir: Path, world_size: int, plan_key: str) -> dict[int, dict]:
    """The ranks of a ``world_size``-rank run of this plan that have finished, with what they recorded."""
    done = {}
    for rank in range(world_size):
        try:
            record = json.loads(rank_file(out_dir, Place(rank, world_size)).read_text())
        except (OSError, ValueError):
            continue
        if record.get("plan") == plan_key:
            done[rank] = record
    return done
