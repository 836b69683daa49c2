"""The CrossDocked2020 reader's complexes in chunks, as jobs for a distributed engine (`pecan sources
crossdocked --engine dask`): each chunk of complexes (its types-file lines) goes to the next free worker,
the most lines first; the client puts the chunks' manifest rows, excluded rows and pose rows back in the
order of the types files, so the output is the one a single process writes. Without an engine the complexes
are read here, one after another, as they always were."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from pecan.sources.crossdocked import Complex
from pecan.sources.selection import Selection

# Complexes a job: ~2 s each at CrossDocked2020's ~9 poses a complex (1,000 lines in 2.2 s), far above a Dask
# job's overhead (37 ms measured), and 22.5 M lines make ~12,000 jobs.
CHUNK_COMPLEXES = 100


@dataclass(frozen=True)
class ChunkJob:
    """Complexes ``position * CHUNK_COMPLEXES ...`` of the plan, each read into ``out`` by ``read``
    (pecan.sources.crossdocked_run.convert_complex, a module-level function: it pickles by name)."""

    position: int
    entries: tuple[Complex, ...]
    out: Path
    options: object  # pecan.sources.crossdocked_run.CrossDockedOptions
    read: Callable

    @property
    def lines(self) -> int:
        """Types-file lines (poses) in the chunk: its cost."""
        return sum(len(entry.poses) for entry in self.entries)


def read_chunk(job: ChunkJob) -> tuple[int, list[dict], list[dict], list[dict]]:
    """A worker's job: the chunk's complexes read and written; (position, manifest rows, excluded, pose rows)."""
    selection = Selection()
    pose_rows: list[dict] = []
    for entry in job.entries:
        pose_rows += job.read(entry, job.out, job.options, selection)
    return job.position, selection.rows, selection.excluded, pose_rows


def chunks(
    entries: Sequence[Complex], out: Path, options, read: Callable, size: int = CHUNK_COMPLEXES
) -> list[ChunkJob]:
    """The plan's complexes, ``size`` to a job, in order."""
    return [ChunkJob(k // size, tuple(entries[k : k + size]), out, options, read) for k in range(0, len(entries), size)]


def read_all(entries: Sequence[Complex], out: Path, options, selection: Selection, read: Callable, engine=None):
    """Every complex read into ``out`` by ``read`` (kept and excluded rows into ``selection``); the pose rows.
    With an ``engine`` (pecan.runtime.engine_dask.DaskEngine) in chunks on its workers, merged in plan order."""
    if engine is None:
        pose_rows: list[dict] = []
        for entry in entries:
            pose_rows += read(entry, out, options, selection)
        return pose_rows
    jobs = chunks(entries, out, options, read, CHUNK_COMPLEXES)
    done: dict[int, tuple] = {}
    with engine.results_of(read_chunk, jobs) as results:
        for position, rows, excluded, poses in results:
            done[position] = (rows, excluded, poses)
    for folder in (out / "poses", out / "crystals"):  # what a worker killed mid-write left (this run's folder)
        for temp in folder.glob(".*.tmp") if folder.is_dir() else ():
            temp.unlink(missing_ok=True)
    pose_rows = []
    for position in range(len(jobs)):
        rows, excluded, poses = done[position]
        selection.rows += rows
        selection.excluded += excluded
        pose_rows += poses
    return pose_rows


def chunk_cost(job: ChunkJob) -> float:
    """A chunk's cost for the longest-first order: its types-file lines."""
    return float(job.lines)


def dask_engine(scheduler_file: Path):
    """The Dask engine of the cluster whose scheduler wrote ``scheduler_file``, the chunks of most lines first."""
    from pecan.runtime.engine_dask import DaskEngine

    return DaskEngine(Path(scheduler_file), cost=chunk_cost)
