"""The one home for starting the product in a fresh interpreter: a clean environment and a checked run.

A test's own process may carry launcher variables (RANK, SLURM_*, ...) or PECAN_* gates; a child that
inherited them would take another code path than the one the test means, so they are dropped."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator, Optional

ROOT = Path(__file__).resolve().parents[1]
LAUNCHER_PREFIXES = ("RANK", "WORLD_SIZE", "LOCAL_", "MASTER_", "SLURM_", "FLUX_", "PECAN_", "TORCHELASTIC")


def clean_env(**extra: str) -> dict[str, str]:
    """os.environ without launcher or PECAN_* variables; unbuffered, one intra-op thread, this checkout first."""
    out = {k: v for k, v in os.environ.items() if not k.startswith(LAUNCHER_PREFIXES)}
    out.update(PYTHONUNBUFFERED="1", OMP_NUM_THREADS="1", PYTHONPATH=str(ROOT))
    out.update(extra)
    return out


def without_modules(tmp_path: Path, *names: str, **extra: str) -> dict[str, str]:
    """``clean_env(**extra)`` whose interpreter cannot import ``names`` (a sitecustomize on PYTHONPATH sets them to
    None in sys.modules, so ``import name`` raises ImportError): a venv without that package."""
    site = tmp_path / "no-modules"
    site.mkdir(exist_ok=True)
    lines = ["import sys"] + [f"sys.modules[{name!r}] = None" for name in names]
    (site / "sitecustomize.py").write_text("\n".join(lines) + "\n")
    env = clean_env(**extra)
    env["PYTHONPATH"] = f"{site}:{env['PYTHONPATH']}"
    return env


def launcher_free(monkeypatch, **extra: str) -> None:
    """This process's environment as ``clean_env`` gives a child (no launcher or PECAN_* variable), ``extra``
    set: for running a command in-process with ``pecan.cli.main`` (monkeypatch restores it)."""
    for name in list(os.environ):
        if name.startswith(LAUNCHER_PREFIXES):
            monkeypatch.delenv(name)
    for name, value in extra.items():
        monkeypatch.setenv(name, value)


def sets(*settings: str) -> list[str]:
    """``--set`` arguments for each ``section.key=value``."""
    return [arg for setting in settings for arg in ("--set", setting)]


def app_argv(config: Path, *settings: str, args: tuple[str, ...] = ()) -> list[str]:
    """The argv of ``python -u main_app.py CONFIG [args] --set ...``."""
    return [sys.executable, "-u", "main_app.py", str(config), *args, *sets(*settings)]


def run_checked(
    command: list[str], timeout: int = 300, env: Optional[dict[str, str]] = None
) -> subprocess.CompletedProcess:
    """Run ``command`` from the repository root; assert exit 0, showing the end of its output."""
    # A new session, so a timeout kills the command's children too instead of leaving them running.
    done = subprocess.run(
        command,
        cwd=ROOT,
        env=env or clean_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
        start_new_session=True,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done


def run_ok(command: list[str], timeout: int = 300, env: Optional[dict[str, str]] = None) -> str:
    """``run_checked``'s stdout + stderr."""
    done = run_checked(command, timeout, env)
    return done.stdout + done.stderr


def act_at(
    command: list[str], marker: str, act: Callable[[subprocess.Popen], None], timeout: int = 300
) -> tuple[int, str]:
    """Start ``command``, call ``act(process)`` at the first output line that holds ``marker``, let it
    finish; return (exit code, all output). Whatever is left past ``timeout`` is killed with its children."""
    process = subprocess.Popen(
        command,
        cwd=ROOT,
        env=clean_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    lines = []
    try:
        for line in process.stdout:
            lines.append(line)
            if marker in line:
                act(process)
                break
        rest, _ = process.communicate(timeout=timeout)
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()
    return process.returncode, "".join(lines) + rest


def start(command: list[str], env: Optional[dict[str, str]] = None, merged: bool = False) -> subprocess.Popen:
    """Start ``command`` from the repository root in a session of its own (so a signal or a kill can reach its
    children through the group), with text pipes; ``merged`` sends stderr into stdout."""
    return subprocess.Popen(
        command,
        cwd=ROOT,
        env=env or clean_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT if merged else subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def kill_group(process: subprocess.Popen) -> None:
    """SIGKILL ``process`` and its group if it still runs, and reap it."""
    if process.poll() is None:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except ProcessLookupError:  # it ended between the poll and the kill
            pass
    process.wait()


@contextmanager
def running(command: list[str], env: Optional[dict[str, str]] = None, merged: bool = False) -> Iterator:
    """``start``; whatever is still running on leaving (a failed assertion included) is killed with its group."""
    process = start(command, env, merged)
    try:
        yield process
    finally:
        kill_group(process)


def wait_for(process: subprocess.Popen, ready: Callable[[], object], timeout: float = 240) -> None:
    """Poll ``ready()`` every 50 ms until it is true; fail showing the output if ``process`` ends first, or
    after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not ready():
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, f"not ready after {timeout} s"
        time.sleep(0.05)


def signal_when(
    process: subprocess.Popen, ready: Callable[[], object], number: int, to_group: bool = False
) -> tuple[str, str, float]:
    """Once ``ready()``, send signal ``number`` to ``process`` (or its whole group) and let it end; returns
    (stdout, stderr, seconds from the signal to its end)."""
    wait_for(process, ready)
    sent = time.monotonic()
    (os.killpg if to_group else os.kill)(process.pid, number)
    stdout, stderr = process.communicate(timeout=60)
    return stdout, stderr, time.monotonic() - sent


def rank_lines(printed: str) -> list[str]:
    """The lines of a dry run that list one rank's share each."""
    return [line for line in printed.splitlines() if line.startswith("rank ")]


def torchrun(*args: str) -> list[str]:
    """The argv of a real torchrun agent (``python -m torch.distributed.run``): for the tests of the agent."""
    return [sys.executable, "-m", "torch.distributed.run", *args]


def group_members(group: int) -> list[str]:
    """Command lines of the live processes of process group ``group`` (a /proc scan; zombies left out): what a
    stopped command left running."""
    members = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[2]) == group and fields[0] != "Z":
            members.append(cmdline)
    return members


def group_left(group: int, grace: float = 5.0) -> list[str]:
    """``group_members`` still there after ``grace`` seconds (a process that has just been killed is
    being reaped for a moment)."""
    deadline = time.monotonic() + grace
    while group_members(group) and time.monotonic() < deadline:
        time.sleep(0.1)
    return group_members(group)
