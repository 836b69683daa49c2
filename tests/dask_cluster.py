"""A Dask cluster for tests (a scheduler and workers as real processes, as `dask scheduler` and `dask worker`
start them under a launcher) and a stand-in for Vina's docking that the workers load (``--preload`` this
file: `dask_setup` puts `stub_dock` in place of `pecan.redock.dock._dock`).

The stub docks nothing: it sleeps the seconds its crystal-ligand file names (``sleep 1.5``), marks its start
in ``<out>/../starts/<complex_id>.<pid>`` (the worker that runs it) and writes poses that depend on the job
alone, so one process and a cluster write the same bytes."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from tests.procs import clean_env, kill_group

HERE = Path(__file__).resolve()


def stub_dock(job) -> dict:
    """Sleep, then write deterministic poses: what `pecan.redock.dock._dock` returns, without Vina."""
    from pecan.redock.dock import RedockError
    from pecan.runtime.fileio import write_text

    for path in (job.receptor, job.crystal_ligand):
        if not path.exists():
            raise RedockError(f"{path}: file not found")
    starts = job.out_dir.parent / "starts"
    starts.mkdir(exist_ok=True)
    (starts / f"{job.complex_id}.{os.getpid()}").write_text(str(time.time()))
    time.sleep(float(job.crystal_ligand.read_text().split()[1]))
    job.poses_path.parent.mkdir(parents=True, exist_ok=True)
    write_text(job.poses_path, f"{job.complex_id}\n  seed {job.complex_seed} key {job.key}\n$$$$\n")
    return {"poses": 1, "best_docking_score": -float(job.complex_seed % 97), "start_rmsd_to_crystal": 0.5}


def dask_setup(worker) -> None:
    """Dask calls this in each worker started with ``--preload`` this file."""
    import pecan.redock.dock

    pecan.redock.dock._dock = stub_dock


def starts(out: Path) -> list[tuple[float, str, int]]:
    """(time, complex id, worker pid) of every start the stub marked beside ``out``, in time order."""
    folder = out.parent / "starts"
    found = []
    for mark in folder.glob("*.*") if folder.exists() else ():
        complex_id, pid = mark.name.rsplit(".", 1)
        found.append((float(mark.read_text()), complex_id, int(pid)))
    return sorted(found)


@contextmanager
def cluster(folder: Path, workers: int = 2, timeout: float = 120) -> Iterator[tuple[Path, list]]:
    """A scheduler and ``workers`` single-thread worker processes without nannies (a killed worker stays
    dead), each loading the stub; yields (scheduler file, worker processes). Everything is killed on exit."""
    scheduler_file = folder / "scheduler.json"
    # One job per worker thread at a time (Dask's default 1.1 lets a 1-thread worker hold a second job, taken
    # before a longer one was submitted): docs/launching.md says the same for real clusters.
    env = clean_env(DASK_DISTRIBUTED__SCHEDULER__WORKER_SATURATION="1.0")
    python = [sys.executable, "-m"]
    logs = [open(folder / "scheduler.log", "w")]
    started = [
        subprocess.Popen(
            [*python, "distributed.cli.dask_scheduler", "--scheduler-file", str(scheduler_file)]
            + ["--port", "0", "--no-dashboard", "--host", "127.0.0.1"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=logs[0],
            start_new_session=True,
        )
    ]
    try:
        _wait(lambda: scheduler_file.exists(), timeout, "the scheduler file")
        for k in range(workers):
            worker = [*python, "distributed.cli.dask_worker", "--scheduler-file", str(scheduler_file)]
            worker += ["--nthreads", "1", "--no-nanny", "--no-dashboard", "--preload", str(HERE)]
            worker += ["--host", "127.0.0.1"]
            logs.append(open(folder / f"worker{k}.log", "w"))
            started.append(subprocess.Popen(worker, env=env, stdout=logs[-1], stderr=logs[-1], start_new_session=True))
        _wait(lambda: _workers_up(scheduler_file) >= workers, timeout, f"{workers} workers")
        yield scheduler_file, started[1:]
    finally:
        for process in reversed(started):
            kill_group(process)
        for log in logs:
            log.close()


def _workers_up(scheduler_file: Path) -> int:
    from distributed import Client

    with Client(scheduler_file=str(scheduler_file), timeout="10s") as client:
        return len(client.scheduler_info()["workers"])


def _wait(ready, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        assert time.monotonic() < deadline, f"no {what} after {timeout} s"
        time.sleep(0.2)
