"""Conversion on a distributed engine (pecan.runtime.engine_dask, `pecan convert --engine dask`): each
complex to the next free worker, the largest first. A complex's cost is the size of its poses file (reading
and featurising scale with its poses); the shards are written by the client as their last complex comes
back, so the output is the one a single process writes."""

from __future__ import annotations

from pathlib import Path

from pecan.runtime.engine_dask import DaskEngine


def complex_cost(job) -> float:
    """Bytes of a `pecan.convert.run.ComplexJob`'s poses file (0 when it cannot be read: it fails at once)."""
    try:
        return float(Path(job.entry.poses).stat().st_size)
    except OSError:
        return 0.0


def dask_engine(scheduler_file: Path) -> DaskEngine:
    """The Dask engine of the cluster whose scheduler wrote ``scheduler_file``, largest complexes first."""
    return DaskEngine(Path(scheduler_file), cost=complex_cost)
