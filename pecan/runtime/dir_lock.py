"""The lock of an output folder: one writer per folder, on clusters too. Training's out_dir, and the output
folders of `pecan convert`, `pecan redock` and `pecan sources`, are all locked by this code.

The lock ``FOLDER/.pecan.lock`` names its owner: host, pid, the process's start time (so a reused pid is not
mistaken for the owner) and the scheduler's job id (SLURM_JOB_ID or FLUX_JOB_ID). The running job refreshes
its mtime every ``HEARTBEAT_S`` (the heartbeat). A lock is stale, and taken over, when

- its owner is gone on this host (no such pid, or a pid with another start time);
- it carries this process's job id from another process (the job was requeued, perhaps on another node);
- its heartbeat is older than the stale limit (train.lock_stale_minutes for training; the owner's node died
  or was cut off);
- the user said so (``pecan train --force-unlock``).

A lock is created by hard-linking a complete temp file to the lock name, which fails when one exists, so a
reader never sees a half-written lock and only one process can own it. A stale lock is removed only by the
holder of ``.pecan.lock.takeover`` (a directory: mkdir is atomic), and only after re-reading that it is
still the same stale lock; so two processes taking over at once never both own it.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import platform
import threading
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from pecan.runtime.errors import OutDirInUse, OutDirUnusable
from pecan.runtime.fileio import json_text

log = logging.getLogger(__name__)

LOCK_NAME = ".pecan.lock"
TAKEOVER_NAME = LOCK_NAME + ".takeover"
HEARTBEAT_S = 60.0
TAKEOVER_STALE_S = 120.0  # a takeover guard this old was left by a process killed while taking over
JOB_ID_VARS = ("SLURM_JOB_ID", "FLUX_JOB_ID")


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, ValueError):
        return pid > 0  # exists, owned by someone else
    return True


def process_start(pid: int) -> Optional[int]:
    """The start time of ``pid`` in clock ticks since boot (/proc), or None where it cannot be read."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(text.rsplit(")", 1)[1].split()[19])


def job_id(environ=None) -> str:
    """The scheduler's job id of this process ('' outside a job)."""
    environ = os.environ if environ is None else environ
    return next((environ[name] for name in JOB_ID_VARS if environ.get(name)), "")


def owner_record() -> dict[str, Any]:
    """What this process writes into a lock it owns."""
    return {
        "host": platform.node(),
        "pid": os.getpid(),
        "pid_start": process_start(os.getpid()),
        "job_id": job_id(),
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "token": uuid.uuid4().hex,
    }


UNREADABLE = "_unreadable"  # key of the holder record read from a lock PECAN did not write (or damaged)


def _holder(text: bytes) -> dict:
    """The owner record of a lock's bytes; a lock that is not one PECAN writes (not UTF-8 JSON, not an
    object, no host name or process id) is ``{UNREADABLE: why}``. Locks are linked complete, so
    such content is never a lock being written."""
    try:
        holder = json.loads(text.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as err:
        return {UNREADABLE: f"not a JSON owner record ({type(err).__name__})"}
    if not isinstance(holder, dict):
        return {UNREADABLE: f"its content is {type(holder).__name__}, not an owner record"}
    pid = holder.get("pid")
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        return {UNREADABLE: f"its pid is {pid!r}, not a process id", **holder}
    if not isinstance(holder.get("host"), str):
        return {UNREADABLE: f"its host is {holder.get('host')!r}, not a host name", **holder}
    return holder


def _read_lock(path: Path) -> tuple[dict, Optional[float]]:
    """The lock's owner record and its heartbeat age in seconds ({}, None when absent)."""
    try:
        age = time.time() - path.stat().st_mtime
        text = path.read_bytes()
    except FileNotFoundError:
        return {}, None
    except OSError:
        return {}, None
    return _holder(text), age


def stale_reason(
    holder: dict, age: Optional[float], stale_after_s: float, mine: dict, stale_option: str = "train.lock_stale_minutes"
) -> str:
    """Why a lock is stale ('' when its owner may be alive); ``stale_option`` names the setting of the limit."""
    if holder.get(UNREADABLE):
        return f"the lock is unreadable: {holder[UNREADABLE]}"
    if age is not None and age > stale_after_s:
        return f"its heartbeat is {age / 60:.1f} min old ({stale_option} {stale_after_s / 60:g})"
    if age is not None and -age > stale_after_s:  # a live owner's heartbeat is its "now": clock skew or a copy
        return (
            f"its heartbeat is {-age / 60:.1f} min in the future (clock skew, or a copied or touched lock; "
            f"more than {stale_option} {stale_after_s / 60:g})"
        )
    if holder.get("job_id") and holder.get("job_id") == mine["job_id"] and holder.get("pid") != mine["pid"]:
        return f"it belongs to an earlier start of this job ({holder['job_id']}, requeued)"
    if holder.get("host") == mine["host"]:
        pid = int(holder.get("pid", -1))
        if not _pid_alive(pid):
            return f"its process {pid} is gone"
        start = holder.get("pid_start")
        if start is not None and process_start(pid) not in (None, start):
            return f"its process {pid} is gone (the pid now belongs to another process)"
    return ""


@dataclass(frozen=True)
class Folder:
    """How messages name a locked folder: the option that chose it, the setting of the stale limit and the flag
    that takes a live-looking lock anyway ('' where the command has none)."""

    option: str = "train.out_dir"
    stale_option: str = "train.lock_stale_minutes"
    force_flag: str = "--force-unlock"


class RunLock:
    """The exclusive lock of one output folder (see the module docstring for owner, heartbeat and takeover)."""

    def __init__(
        self, out_dir: str | os.PathLike, stale_after_s: float = 600.0, force: bool = False, folder: Folder = Folder()
    ) -> None:
        self.path = Path(out_dir) / LOCK_NAME
        self.stale_after_s, self.force, self.folder = stale_after_s, force, folder
        self.mine = owner_record()
        self.held = False
        self._stop = threading.Event()
        self._heartbeat: Optional[threading.Thread] = None

    def acquire(self, heartbeat: bool = True) -> "RunLock":
        """Own the lock or raise OutDirInUse naming the live holder; starts the heartbeat thread."""
        check_out_dir(self.path.parent, self.folder.option)
        for _ in range(50):
            if self._create():
                self.held = True
                if heartbeat:
                    self._start_heartbeat()
                return self
            holder, age = _read_lock(self.path)
            if age is None and not holder:
                continue  # released between our attempt and the read: try again
            reason = (
                self.folder.force_flag
                if self.force
                else stale_reason(holder, age, self.stale_after_s, self.mine, self.folder.stale_option)
            )
            if not reason:
                raise self._in_use(holder, age)
            self._take_over(holder, reason)
        raise OutDirInUse(f"cannot take the lock {self.path}: it keeps changing hands")

    def _create(self) -> bool:
        """Link a complete temp file to the lock name; False when a lock exists."""
        # Not named like the atomic writers' temp files, which remove_stale_temps deletes.
        temp = self.path.with_name(f"{LOCK_NAME}.{self.mine['token']}.new")
        try:
            temp.write_text(json_text(self.mine))
            try:
                os.link(temp, self.path)
            except (FileExistsError, FileNotFoundError):  # a lock is there (or our temp was swept): look again
                return False
            finally:
                temp.unlink(missing_ok=True)
        except OSError as err:
            raise unusable(self.path.parent, err, self.folder.option) from None
        return True

    def _take_over(self, holder: dict, reason: str) -> None:
        """Remove the stale lock ``holder`` if it is still the one in place (under the takeover guard)."""
        guard = self.path.with_name(TAKEOVER_NAME)
        try:
            guard.mkdir()
        except FileExistsError:
            try:
                if time.time() - guard.stat().st_mtime > TAKEOVER_STALE_S:
                    guard.rmdir()
            except OSError:
                pass
            time.sleep(0.05)  # another process is taking over; look again
            return
        try:
            current, _ = _read_lock(self.path)
            if current.get("token") == holder.get("token"):
                log.warning(
                    "taking over the lock of a dead run in %s (%s: host %s, pid %s, job %s): %s",
                    self.path.parent,
                    self.path.name,
                    holder.get("host", "?"),
                    holder.get("pid", "?"),
                    holder.get("job_id") or "-",
                    reason,
                )
                self.path.unlink(missing_ok=True)
        finally:
            guard.rmdir()

    def _in_use(self, holder: dict, age: Optional[float]) -> OutDirInUse:
        beat = f", heartbeat {age:.0f} s ago" if age is not None else ""
        flag = self.folder.force_flag
        force = f", or rerun with {flag} if you know that run is gone" if flag else ""
        return OutDirInUse(
            f"{self.folder.option} {self.path.parent} is in use by another run (host {holder.get('host', '?')}, pid "
            f"{holder.get('pid', '?')}, job {holder.get('job_id') or '-'}, started {holder.get('started', '?')}"
            f"{beat}); use another {self.folder.option.rpartition('.')[2]}, wait until its heartbeat is "
            f"{self.stale_after_s / 60:g} min old ({self.folder.stale_option}){force}"
        )

    def owned(self) -> bool:
        """True while the lock in place is this process's."""
        return self.held and _read_lock(self.path)[0].get("token") == self.mine["token"]

    def _start_heartbeat(self) -> None:
        self._heartbeat = threading.Thread(target=self._beat, name="pecan-lock-heartbeat", daemon=True)
        self._heartbeat.start()

    def _beat(self) -> None:
        while not self._stop.wait(HEARTBEAT_S):
            if not self.owned():
                log.error("the lock %s was taken over by another run; this run's outputs may mix with it", self.path)
                return
            try:
                os.utime(self.path)
            except OSError as err:
                log.warning("cannot refresh the heartbeat of %s: %s", self.path, err)

    def release(self) -> None:
        """Stop the heartbeat and remove the lock if this process holds it."""
        self._stop.set()
        if self.owned():
            self.path.unlink(missing_ok=True)
        self.held = False


def unusable(out_dir: Path, err: OSError, option: str = "train.out_dir") -> OutDirUnusable:
    """The error for an output folder this run cannot write: names the option, the path and the errno."""
    code = errno.errorcode.get(err.errno or 0, str(err.errno))
    return OutDirUnusable(
        f"{option} {out_dir} cannot hold a run: {err.strerror or err} ({code}) at "
        f"{err.filename or out_dir}; choose a writable directory"
    )


def check_out_dir(out_dir: Path, option: str = "train.out_dir") -> None:
    """The folder must be a directory this process can create and write (not a file, not read-only)."""
    if out_dir.exists() and not out_dir.is_dir():
        raise unusable(out_dir, OSError(errno.ENOTDIR, "it exists and is not a directory", str(out_dir)), option)
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise unusable(out_dir, err, option) from None
