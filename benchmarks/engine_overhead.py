"""What the Dask engine costs per job, against the local pool, and what a killed worker costs.

    python -m benchmarks.engine_overhead [--jobs 400] [--out benchmarks/engine_overhead.json]

``--jobs`` empty jobs through pecan.runtime.pool.results_of (2 spawned workers) and through
pecan.runtime.engine_dask.DaskEngine on a 2-worker Dask cluster (one process per worker, one thread each):
seconds per job, and the start (pool start / client connect) apart. Then 16 jobs of 0.5 s on 2 workers, one
worker SIGKILLed 1 s in: every result still comes back, and the time taken against the 4 s of a healthy pair.
Needs the dist extra.
"""

from __future__ import annotations

import argparse
import os
import signal
import tempfile
import time
from pathlib import Path


def empty(job: int) -> int:
    """A job that does nothing."""
    return job


def nap(job: int) -> tuple[int, int]:
    """Half a second of work; the worker's pid."""
    time.sleep(0.5)
    return job, os.getpid()


def _pool(jobs: int) -> dict:
    from pecan.runtime.pool import results_of

    began = time.perf_counter()
    with results_of(empty, list(range(jobs)), 2) as results:
        first = next(iter(results))
        started = time.perf_counter()
        got = [first, *results]
    end = time.perf_counter()
    assert sorted(got) == list(range(jobs))
    return {"start_s": round(started - began, 3), "per_job_ms": round(1000 * (end - started) / (jobs - 1), 3)}


def _dask(engine, jobs: int) -> dict:
    began = time.perf_counter()
    with engine.results_of(empty, list(range(jobs))) as results:
        first = next(iter(results))
        started = time.perf_counter()
        got = [first, *results]
    end = time.perf_counter()
    assert sorted(got) == list(range(jobs))
    return {"start_s": round(started - began, 3), "per_job_ms": round(1000 * (end - started) / (jobs - 1), 3)}


def _killed(engine, client) -> dict:
    pids = list(client.run(os.getpid).values())
    began = time.perf_counter()
    with engine.results_of(nap, list(range(16))) as results:
        got = []
        for result in results:
            got.append(result)
            if len(got) == 2:  # 1 s in: both workers busy with their second job
                os.kill(pids[0], signal.SIGKILL)
    took = time.perf_counter() - began
    assert sorted(job for job, _ in got) == list(range(16))
    return {"jobs": 16, "job_s": 0.5, "healthy_s": 4.0, "took_s": round(took, 2), "all_results": True}


def main(argv=None) -> int:
    """Measure and write the JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=400)
    parser.add_argument("--out", type=Path, default=Path(__file__).with_suffix(".json"))
    args = parser.parse_args(argv)
    from distributed import Client, LocalCluster

    from pecan.runtime.engine_dask import DaskEngine
    from pecan.runtime.fileio import json_text, write_text

    result = {"jobs": args.jobs, "pool_2_workers": _pool(args.jobs)}
    with tempfile.TemporaryDirectory() as folder:
        # workers under nannies (LocalCluster's way): the killed one is restarted, its job rescheduled
        with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
            with Client(cluster) as client:
                client.write_scheduler_file(str(Path(folder) / "scheduler.json"))
                engine = DaskEngine(Path(folder) / "scheduler.json")
                result["dask_2_workers"] = _dask(engine, args.jobs)
                result["dask_worker_killed"] = _killed(engine, client)
    result["command"] = "python -m benchmarks.engine_overhead" + (" " + " ".join(argv) if argv else "")
    print(json_text(result))
    write_text(args.out, json_text(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
