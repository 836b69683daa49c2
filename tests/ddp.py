"""The 2-process harness: the ranks of a DDP job as plain subprocesses, without a torchrun agent.

Each rank gets RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_ADDR=127.0.0.1 and a free
MASTER_PORT: the env:// contract torchrun provides, so the product discovers a torchrun job and joins over
gloo by the same code path. What only the agent does (rendezvous, signal forwarding, restarts) is tested
with a real torchrun in tests/train/test_ddp.py and tests/train/test_lifecycle_ddp.py."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import tempfile
import time
from typing import IO, Optional

from tests.procs import ROOT, clean_env


def free_port() -> int:
    """A TCP port nobody listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def rank_env(rank: int, world_size: int, port: int, base: Optional[dict[str, str]] = None) -> dict[str, str]:
    """The environment of one rank on this host, as torchrun would set it."""
    return {
        **(clean_env() if base is None else base),
        "RANK": str(rank),
        "LOCAL_RANK": str(rank),
        "WORLD_SIZE": str(world_size),
        "LOCAL_WORLD_SIZE": str(world_size),
        "MASTER_ADDR": "127.0.0.1",
        "MASTER_PORT": str(port),
    }


def start_ranks(
    command: list[str], nprocs: int = 2, env: Optional[dict[str, str]] = None, outputs: Optional[list[IO]] = None
) -> list[subprocess.Popen]:
    """Start ``nprocs`` ranks of ``command``, each in its own session; output to ``outputs[rank]`` or a pipe."""
    port = free_port()
    return [
        subprocess.Popen(
            command,
            cwd=ROOT,
            env=rank_env(rank, nprocs, port, env),
            stdout=outputs[rank] if outputs else subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
        for rank in range(nprocs)
    ]


def kill_all(ranks: list[subprocess.Popen]) -> None:
    """SIGKILL every rank still running (and its children), then reap them all."""
    for process in ranks:
        if process.poll() is None:
            try:
                os.killpg(process.pid, signal.SIGKILL)
            except ProcessLookupError:  # it ended between the poll and the kill
                pass
    for process in ranks:
        process.wait()


def run_ranks(
    command: list[str], nprocs: int = 2, timeout: int = 300, env: Optional[dict[str, str]] = None, check: bool = True
) -> tuple[list[int], str]:
    """Run ``nprocs`` ranks to the end; return (exit codes, every rank's output, rank 0 first).

    A rank past ``timeout`` s gets both killed; with ``check``, a failure or a timeout fails the test
    showing the end of each rank's output."""
    files = [tempfile.TemporaryFile("w+") for _ in range(nprocs)]
    ranks = start_ranks(command, nprocs, env, files)
    deadline, timed_out = time.monotonic() + timeout, False
    try:
        for process in ranks:
            try:
                process.wait(timeout=max(deadline - time.monotonic(), 0.1))
            except subprocess.TimeoutExpired:
                timed_out = True
                break
    finally:
        kill_all(ranks)
    texts = []
    for handle in files:
        handle.seek(0)
        texts.append(handle.read())
        handle.close()
    codes = [process.returncode for process in ranks]
    if check and (timed_out or any(codes)):
        shown = "\n".join(f"--- rank {r} (exit {codes[r]}):\n{text[-3000:]}" for r, text in enumerate(texts))
        raise AssertionError(f"{'timed out after ' + str(timeout) + ' s; ' if timed_out else ''}ranks {codes}\n{shown}")
    return codes, "".join(texts)


def run_ranks_ok(command: list[str], nprocs: int = 2, timeout: int = 300, env: Optional[dict[str, str]] = None) -> str:
    """``run_ranks`` that must succeed; returns every rank's output."""
    return run_ranks(command, nprocs, timeout, env)[1]
