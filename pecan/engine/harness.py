"""The run harness: every command that runs a job (`pecan train`, `pecan predict`, `pecan score`, main_app.py)
goes through ``run``, which owns what a job's process needs around the job itself.

In order: find this process's place in the launcher's job (``pecan.engine.launchers.discover``), set up the
console log of this rank, ``prepare`` the job (the command's reading and checking of its invocation), add the
per-rank log file (``Job.log_dir``), join the process group and choose the device, run ``Job.body`` with a
``Run`` (its place, its device, the signal handlers and clean-ups it registers), then clean up in ``finally``:
the job's clean-ups (last registered first), tracing, the process group (with a last barrier only after a
success), the log handlers. The exit code is decided here and only here (``exit_code_of``).
"""

from __future__ import annotations

import logging
import os
import signal
import socket
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

from pecan.runtime.errors import exit_code, expected_error_code

RANK_FORMAT = "[pecan r{rank}] %(levelname)s %(message)s"
"""The console line of a rank (``{rank}`` is filled in); ``%(label)s`` is the logger's origin (``label_by_origin``)."""

LABEL_FORMAT = "[%(label)s] %(levelname)s %(message)s"
"""A console line of every rank alike: ``pecan`` or the library that logged it (`pecan score`)."""

INVOCATION_ERRORS = (ValueError, OSError)
"""What ``prepare`` raises for a wrong invocation (ConfigError included): the message, exit 2."""


class JobStopped(Exception):
    """The job stopped cleanly on request (a signal) after saving what it had: rank 0 prints the message and the
    process exits ``exit_code``; the closing barrier is reached by every rank."""

    exit_code = 0


@dataclass(frozen=True)
class Job:
    """What a command asks the harness to run: the body and how its process is set up."""

    body: Callable[["Run"], Optional[int]]
    device: str = "auto"  # train.device's values (``resolve_device``)
    collective_timeout_s: float = 1800.0
    log_dir: Optional[str] = None  # per-rank log files in log_dir/logs/rank<k>.log; None: the console only
    interrupted: Optional[str] = None  # said on Ctrl-C before the job's own handlers (exit 130); None: raise
    process_group: bool = True  # False: a job of one process that joins no group and takes no device


@dataclass
class Run:
    """A running job's place in the launcher's job, its device, and what it registers for the clean-up."""

    env: Any  # pecan.engine.launchers.DistEnv
    device: Any  # torch.device (None for a job without a process group)
    cleanups: list[Callable[[], Any]] = field(default_factory=list)

    def on_exit(self, cleanup: Callable[[], Any]) -> None:
        """Run ``cleanup`` when the job ends, however it ends (last registered, first run)."""
        self.cleanups.append(cleanup)

    def watch_signals(self, handlers):
        """Install ``handlers`` (``install()``/``restore()``, e.g. pecan.train.lifecycle.StopSignals) for the
        rest of the job; they are restored when it ends."""
        handlers.install()
        self.on_exit(handlers.restore)
        return handlers

    def close(self) -> None:
        """Run the clean-ups, last first, and drop them (and with them what they hold: a DDP model must go
        before the process group does)."""
        while self.cleanups:
            self.cleanups.pop()()


def exit_code_of(err: BaseException, invocation: bool = False, printed: bool = False) -> int:
    """The exit code of a command that raised ``err``: the one place the code is chosen. An invocation error
    (raised by ``prepare`` or the launcher's environment) is printed as ``error: ...``, exit 2; a clean stop exits
    its code; Ctrl-C 130; an expected error type its code in pecan.runtime.errors.EXIT_CODES, logged (``printed``:
    printed as ``error: ...``); anything else is a bug and is raised again with its traceback."""
    if invocation:
        print(f"error: {err}", file=sys.stderr)
        return 2
    if isinstance(err, JobStopped):
        return err.exit_code
    if isinstance(err, KeyboardInterrupt):
        return 128 + signal.SIGINT
    if not printed:
        return expected_error_code(err)  # type: ignore[arg-type]
    code = exit_code(err)
    if code is None:
        raise err
    print(f"error: {err}", file=sys.stderr)
    return code


def invoke(action: Callable[[], Optional[int]]) -> int:
    """A command that runs no job (a report, a listing; no process set-up, no logs): ``action``'s exit code. An
    expected error exits with its code in EXIT_CODES, another ``ValueError``/``OSError`` is a wrong invocation
    (2); both are printed as ``error: ...``. Anything else is a bug and is raised again."""
    try:
        code = action()
    except INVOCATION_ERRORS as err:
        return exit_code_of(err, invocation=exit_code(err) is None, printed=True)
    return 0 if code is None else code


def run(prepare: Callable[[], Job], console_format: str = RANK_FORMAT, quiet_ranks: bool = True) -> int:
    """Run the job ``prepare`` returns under the harness; its exit code. ``console_format`` is the console
    line; ``quiet_ranks``: ranks other than 0 show warnings only (they would repeat rank 0's lines)."""
    from pecan.engine.launchers import discover

    try:
        env = discover()
    except INVOCATION_ERRORS as err:
        return exit_code_of(err, invocation=True)
    try:
        console_logs(env.rank, env.is_main or not quiet_ranks, console_format)
        try:
            job = prepare()
        except INVOCATION_ERRORS as err:
            return exit_code_of(err, invocation=True)
        if job.log_dir is not None:
            rank_log_file(env.rank, job.log_dir)
        return run_job(job, env)
    finally:
        close_run_logs()


def run_job(job: Job, env) -> int:
    """Join the process group, run the body, clean up; the exit code (``exit_code_of``)."""
    from pecan.runtime import tracing

    current, finished = None, False
    try:
        current = Run(env, join(job, env) if job.process_group else None)
        code = job.body(current)
        finished = True
        return 0 if code is None else code
    except JobStopped as stop:
        finished = True  # every rank stopped after the same step: the closing barrier is reached by all
        if env.is_main:
            print(stop, flush=True)
        return exit_code_of(stop)
    except KeyboardInterrupt as interrupt:
        if job.interrupted is None:
            raise
        print(job.interrupted, file=sys.stderr)
        return exit_code_of(interrupt)
    except Exception as err:
        return exit_code_of(err)
    finally:
        if current is not None:
            current.close()
        current = None
        tracing.finalize()
        if job.process_group:
            from pecan.engine.distributed import cleanup_distributed

            cleanup_distributed(graceful=finished)


def join(job: Job, env):
    """Join the launcher's process group (none in one process) and choose the device (``Job.device``)."""
    from pecan.engine.distributed import init_distributed, resolve_device

    discovered = init_distributed(env, timeout_s=job.collective_timeout_s)
    return resolve_device(job.device, discovered, env.local_rank)


def label_by_origin(record: logging.LogRecord) -> bool:
    """Label a log line ``pecan`` only when PECAN logged it; another library's lines carry its own name."""
    record.label = "pecan" if record.name == "pecan" or record.name.startswith("pecan.") else record.name
    return True


def console_logs(rank: int, verbose: bool, line_format: str = RANK_FORMAT) -> None:
    """The console handler of this rank: INFO and above when ``verbose``, else warnings."""
    close_run_logs()  # an earlier run in this process
    console = logging.StreamHandler()
    console.setLevel(logging.INFO if verbose else logging.WARNING)
    console.setFormatter(logging.Formatter(line_format.replace("{rank}", str(rank))))
    console.addFilter(label_by_origin)
    console.pecan_run = True
    root = logging.getLogger()
    root.setLevel(logging.INFO)
    root.addHandler(console)


def rank_log_file(rank: int, out_dir: str) -> None:
    """out_dir/logs/rank<k>.log, INFO and above, for every rank, so a failure on rank 5 of 64 has its own
    record. An out_dir that cannot hold the log leaves the console only, with a warning."""
    path = Path(out_dir) / "logs" / f"rank{rank}.log"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handler = logging.FileHandler(path, mode="a", encoding="utf-8")
    except OSError as err:
        logging.getLogger("pecan").warning("no per-rank log %s: %s", path, err.strerror or err)
        return
    handler.setLevel(logging.INFO)
    handler.pecan_run = True
    handler.setFormatter(logging.Formatter(f"%(asctime)s [pecan r{rank}] %(levelname)s %(name)s: %(message)s"))
    logging.getLogger().addHandler(handler)
    logging.getLogger("pecan").info("rank %d, pid %d on %s, logs to %s", rank, os.getpid(), socket.gethostname(), path)


def setup_logging(rank: int, is_main: bool, out_dir: Optional[str]) -> None:
    """Console: INFO and above on rank 0, warnings elsewhere; file: out_dir/logs/rank<k>.log (``rank_log_file``)."""
    console_logs(rank, is_main)
    if out_dir is not None:
        rank_log_file(rank, out_dir)


def close_run_logs() -> None:
    """Detach and close the handlers the harness added, so the run's log file is not held open after the run
    (a process that trains again, or unmounts out_dir, would otherwise find it busy)."""
    root = logging.getLogger()
    for old in [h for h in root.handlers if getattr(h, "pecan_run", False)]:
        root.removeHandler(old)
        old.close()
