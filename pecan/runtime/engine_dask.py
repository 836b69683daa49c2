"""Independent jobs on a Dask distributed cluster: handed out as workers free up, longest first by a
predicted cost, and a lost worker's job run again on another (the `dist` extra).

The same contract as `pecan.runtime.pool.results_of`: ``function(job)`` results in completion order, each
job a picklable object and ``function`` a module-level function; what a job writes depends on the job alone,
so the output is the one a single process writes, whichever worker ran each job and however often. This
process is the client: it owns the output folder (one run per folder, as in a local run), submits every job
with its cost as Dask's priority and writes the tables as results arrive. The cluster is one the user
already runs (``dask scheduler --scheduler-file F`` and ``dask worker --scheduler-file F``, e.g. under srun
or flux: docs/launching.md); a worker that dies (SIGKILL, a node lost) has its job rescheduled by Dask's
scheduler, up to ``distributed.scheduler.allowed-failures`` times (3) before the job is a `WorkerLost`.

Why Dask (BENCHMARKS.md, "Redock and convert on a distributed engine"): 10.9 s and ~34 MB to install beside
PECAN's CPU environment (pure Python wheels, no compiler, no MPI library), 37 ms per job on a loaded 2-core
machine (0.09% of a median Vina complex), and a killed worker's job rescheduled; mpi4py.futures needs an MPI
library and an MPI job ends with a lost rank.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Sequence

EXTRA_HINT = "the dask engine needs the dist extra: pip install -e '.[dist]' -c constraints-cpu.txt"


class WorkerLost(RuntimeError):
    """A job whose workers died more often than the scheduler allows (a job that kills its worker)."""


def longest_first(jobs: Sequence[Any], costs: Sequence[float]) -> list[Any]:
    """``jobs`` by descending cost, ties in plan order (the order a dry run lists)."""
    if len(costs) != len(jobs):
        raise ValueError(f"{len(costs)} costs for {len(jobs)} jobs")
    return [jobs[k] for k in sorted(range(len(jobs)), key=lambda k: (-costs[k], k))]


def priorities(costs: Sequence[float]) -> list[int]:
    """Dask priorities (higher runs first): a job's rank in the longest-first order, so equal costs keep plan
    order and no float reaches the scheduler."""
    order = sorted(range(len(costs)), key=lambda k: (-costs[k], k))
    ranks = [0] * len(costs)
    for position, k in enumerate(order):
        ranks[k] = len(costs) - position
    return ranks


def _client(scheduler_file: Path):
    try:
        from distributed import Client
    except ImportError as err:
        raise ImportError(EXTRA_HINT) from err
    if not Path(scheduler_file).is_file():
        raise ValueError(f"--scheduler-file {scheduler_file}: no such file (start the scheduler first)")
    return Client(scheduler_file=str(scheduler_file), timeout="60s")


@dataclass(frozen=True)
class DaskEngine:
    """Runs a command's jobs on the cluster whose scheduler wrote ``scheduler_file``; ``cost(job)`` orders
    them (the largest first)."""

    scheduler_file: Path
    cost: Callable[[Any], float] = lambda job: 0.0

    def describe(self) -> str:
        """``dask cluster at tcp://... (4 workers)`` once connected; the scheduler file before."""
        return f"dask cluster of {self.scheduler_file}"

    @contextmanager
    def results_of(self, function: Callable[[Any], Any], jobs: list, workers: int = 0) -> Iterator[Iterable[Any]]:
        """``function(job)`` for every job in completion order (``workers`` is the cluster's business and
        ignored). A `pecan.runtime.pool.Stopped` raised inside leaves with ``in_flight`` set to the jobs not
        finished; they are cancelled on the cluster."""
        from pecan.runtime.pool import Stopped

        if not jobs:
            yield iter(())
            return
        client = _client(self.scheduler_file)
        futures: dict[Any, Any] = {}
        try:
            costs = [float(self.cost(job)) for job in jobs]
            # Submitted longest first too: the scheduler hands a job to an idle worker as soon as it arrives.
            for job, priority in zip(longest_first(jobs, costs), sorted(priorities(costs), reverse=True)):
                futures[client.submit(function, job, priority=priority, pure=False)] = job
            yield _completed(futures)
        except Stopped as stop:
            stop.in_flight = [job for future, job in futures.items() if not future.done()]
            raise
        finally:
            client.cancel(list(futures), force=True)
            client.close()


def _completed(futures: dict) -> Iterator[Any]:
    from distributed import as_completed
    from distributed.scheduler import KilledWorker

    for future in as_completed(list(futures)):
        try:
            result = future.result()
        except KilledWorker as err:
            raise WorkerLost(f"{futures[future]!r}: every worker that ran it died ({err})") from None
        del futures[future]
        yield result
