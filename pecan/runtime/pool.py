"""Running independent jobs in a spawn-context process pool (or in this process for one worker).

Used by the structure converter and the redocking command: each job is a picklable object and ``function``
a module-level function, so the spawned workers import only what the job needs.
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Callable, Iterable, Iterator


@contextmanager
def results_of(function: Callable[[Any], Any], jobs: list, workers: int) -> Iterator[Iterable[Any]]:
    """Yield an iterator of ``function(job)`` results in completion order; the pool is closed on exit."""
    if workers <= 1:
        yield map(function, jobs)
        return
    import multiprocessing

    pool = multiprocessing.get_context("spawn").Pool(workers)
    try:
        yield pool.imap_unordered(function, jobs)
    finally:
        pool.close()
        pool.join()
