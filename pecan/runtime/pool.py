"""Running independent jobs in spawn-context worker processes (or in this process for one worker), with a
clean stop on SIGINT and SIGTERM.

Used by the structure converter and the redocking command: each job is a picklable object and ``function``
a module-level function, so the spawned workers import only what the job needs.

Stopping. Under `stop_on_signals`, the first SIGINT or SIGTERM raises `Stopped` in this process; leaving
`results_of` with it stops every worker and fills ``Stopped.in_flight`` with the jobs that were running, so
the caller can record them. Each worker holds one job at a time on a pipe of its own (the parent always
knows which jobs run where; no lock is shared that a killed worker could leave held). Workers ignore SIGINT:
Ctrl-C and a batch system's step cleanup reach the whole process group, and the parent decides. A worker
ends at once on SIGTERM, and the children it started (a docking search) end with it (`die_with_parent`, on
Linux); a worker still alive ``STOP_GRACE_S`` after that is killed.
"""

from __future__ import annotations

import os
import signal
import sys
from contextlib import contextmanager
from typing import Any, Callable, Iterable, Iterator

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)
STOP_GRACE_S = 10.0
RETRY_S = 0.2


class Stopped(BaseException):
    """SIGINT or SIGTERM asked the run to stop; ``in_flight``: the jobs that were running then."""

    def __init__(self, signum: int, in_flight: Iterable[Any] = ()):
        super().__init__(signal.Signals(signum).name)
        self.signum = int(signum)
        self.in_flight = list(in_flight)

    @property
    def name(self) -> str:
        """SIGINT or SIGTERM."""
        return signal.Signals(self.signum).name

    @property
    def exit_code(self) -> int:
        """The shell's code for a process ended by this signal: 130 for SIGINT, 143 for SIGTERM."""
        return 128 + self.signum


_stopping = {"signum": 0, "active": False}


def _raise_stopped(signum: int, frame: Any) -> None:
    # Once only: a second Ctrl-C (or the SIGTERM a scheduler sends after SIGINT) must not break the cleanup.
    if _stopping["signum"]:
        return
    if _importing(frame):
        # Raised inside an import, the exception can land in a C++ extension's module init, which aborts the
        # process; the same signal comes again shortly, once the import is done.
        import threading

        threading.Timer(RETRY_S, _signal_again, (signum,)).start()
        return
    _stopping["signum"] = signum
    raise Stopped(signum)


def _signal_again(signum: int) -> None:
    if _stopping["active"]:  # not once this process's own handlers are gone
        os.kill(os.getpid(), signum)


def _importing(frame: Any) -> bool:
    while frame is not None:
        if frame.f_code.co_filename.startswith("<frozen importlib"):
            return True
        frame = frame.f_back
    return False


@contextmanager
def stop_on_signals() -> Iterator[None]:
    """SIGINT and SIGTERM raise `Stopped` (the first of them; later ones are ignored) until exit."""
    _stopping.update(signum=0, active=True)
    previous = {number: signal.signal(number, _raise_stopped) for number in STOP_SIGNALS}
    try:
        yield
    finally:
        _stopping["active"] = False
        for number, handler in previous.items():
            signal.signal(number, handler)


def _serve(function: Callable[[Any], Any], connection: Any) -> None:
    """A worker's loop: a job from the pipe, its result back, until told to stop."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, _exit_now)
    die_with_parent()
    try:
        while True:
            job = connection.recv()
            if job is None:
                return
            try:
                reply = ("result", function(job))
            except Exception as err:  # noqa: BLE001 - carried to the parent, which raises it
                reply = ("error", err)
            try:
                connection.send(reply)
            except (TypeError, AttributeError, ValueError) as err:  # an exception that does not pickle
                connection.send(("error", RuntimeError(f"{reply[1]!r} (not picklable: {err})")))
    except (EOFError, OSError):  # the parent went away
        return


def _exit_now(signum: int, frame: Any) -> None:
    # No exception: one raised here could land inside a C++ extension's call back into Python (an import in
    # a nanobind module's init) and abort the worker with a traceback. The parent records the job; the
    # worker's own children (a docking search) die with it (die_with_parent).
    os._exit(128 + signum)


def die_with_parent(expected_parent: int | None = None) -> None:
    """On Linux, SIGKILL this process when the process that started it ends, however it ends; with
    ``expected_parent``, exit at once if that one has already gone (the request came before the binding)."""
    if sys.platform.startswith("linux"):
        import ctypes

        pr_set_pdeathsig = 1
        try:
            ctypes.CDLL(None, use_errno=True).prctl(pr_set_pdeathsig, int(signal.SIGKILL))
        except (OSError, AttributeError):  # no prctl in this libc: the parent's kill on exit still holds
            pass
    if expected_parent is not None and os.getppid() != expected_parent:
        os._exit(128 + int(signal.SIGKILL))


def _send_quietly(connection: Any, message: Any) -> None:
    try:
        connection.send(message)
    except (OSError, Stopped):
        pass


class _InProcess:
    """One worker: the jobs run here, one after another."""

    def __init__(self, function: Callable[[Any], Any], jobs: list):
        self.function, self.jobs, self.current = function, jobs, []

    def results(self) -> Iterator[Any]:
        for job in self.jobs:
            self.current = [job]
            result = self.function(job)
            self.current = []
            yield result

    def running(self) -> list:
        return list(self.current)

    def close(self) -> None:
        self.current = []


class _Workers:
    """Spawned worker processes, one pipe each; a job is handed to a worker only when it is idle."""

    def __init__(self, function: Callable[[Any], Any], jobs: list, workers: int):
        import multiprocessing

        context = multiprocessing.get_context("spawn")
        self.pending = list(reversed(jobs))
        self.jobs: dict[Any, Any] = {}  # connection -> the job it runs
        self.processes: dict[Any, Any] = {}  # connection -> its worker process
        # Started with SIGINT ignored, which they inherit: a Ctrl-C during their imports stays quiet.
        previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
        try:
            for _ in range(min(workers, len(jobs))):
                parent_end, child_end = context.Pipe()
                process = context.Process(target=_serve, args=(function, child_end), daemon=True)
                process.start()
                child_end.close()
                self.processes[parent_end] = process
        finally:
            signal.signal(signal.SIGINT, previous)

    def results(self) -> Iterator[Any]:
        from multiprocessing.connection import wait

        for connection in list(self.processes):
            self._hand_out(connection)
        while self.jobs:
            for connection in wait(list(self.jobs)):
                yield self._receive(connection)
                self._hand_out(connection)

    def _hand_out(self, connection: Any) -> None:
        if self.pending:
            self.jobs[connection] = self.pending.pop()
            connection.send(self.jobs[connection])

    def _receive(self, connection: Any) -> Any:
        try:
            kind, value = connection.recv()
        except (EOFError, OSError):
            process = self.processes[connection]
            process.join(1.0)
            code = process.exitcode
            signum = -code if code is not None and code < 0 else (code or 0) - 128
            if signum in STOP_SIGNALS:  # the worker was signalled (with its group) before this process noticed
                _stopping["signum"] = _stopping["signum"] or signum
                raise Stopped(signum) from None
            raise RuntimeError(
                f"worker process {process.pid} ended (exit code {code}) while running {self.jobs[connection]!r}"
            ) from None
        del self.jobs[connection]
        if kind == "error":
            raise value
        return value

    def running(self) -> list:
        return list(self.jobs.values())

    def close(self) -> None:
        """Stop every worker: SIGTERM (ends its job and that job's child process), then a kill if needed."""
        for connection, process in self.processes.items():
            if process.is_alive():
                if connection in self.jobs:
                    process.terminate()
                else:
                    _send_quietly(connection, None)
        for connection, process in self.processes.items():
            process.join(STOP_GRACE_S)
            if process.is_alive():
                process.kill()
                process.join()
            connection.close()
        self.jobs.clear()


@contextmanager
def results_of(function: Callable[[Any], Any], jobs: list, workers: int) -> Iterator[Iterable[Any]]:
    """Yield an iterator of ``function(job)`` results in completion order; the workers are stopped on exit.
    A `Stopped` raised inside leaves with ``in_flight`` set to the jobs that were running."""
    pool = _InProcess(function, jobs) if workers <= 1 else _Workers(function, jobs, workers)
    try:
        yield pool.results()
    except Stopped as stop:
        stop.in_flight = pool.running()
        raise
    finally:
        pool.close()
