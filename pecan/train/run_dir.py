"""Run-directory integrity: one run per out_dir (a lock naming host and pid) and stale temp files removed at
start. Write errors naming the path come from pecan.fileio."""
from __future__ import annotations

import json
import logging
import os
import platform
import time
from pathlib import Path

log = logging.getLogger(__name__)

LOCK_NAME = ".pecan.lock"
# Temp files of the atomic writers (mkstemp ".NAME.XXXX.tmp", config's ".NAME.tmp-PID").
TEMP_PATTERNS = (".*.tmp", ".*.tmp-*")


from pecan.errors import OutDirInUse  # noqa: E402,F401  (re-exported)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # exists, owned by someone else
    return True


def _read_lock(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


class RunLock:
    """An exclusive lock file in out_dir; a lock left by a dead process on this host is taken over."""

    def __init__(self, out_dir: str | os.PathLike) -> None:
        self.path = Path(out_dir) / LOCK_NAME
        self.held = False

    def acquire(self) -> "RunLock":
        """Create the lock or raise OutDirInUse naming the holder's host and pid."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        mine = {"host": platform.node(), "pid": os.getpid(), "started": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
        for _ in range(2):
            try:
                handle = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                holder = _read_lock(self.path)
                if holder.get("host") == mine["host"] and not _pid_alive(int(holder.get("pid", -1))):
                    log.warning("taking over the lock of a dead run (pid %s) in %s", holder.get("pid"),
                                self.path.parent)
                    self.path.unlink(missing_ok=True)
                    continue
                raise OutDirInUse(
                    f"train.out_dir {self.path.parent} is in use by another run (host {holder.get('host', '?')}, "
                    f"pid {holder.get('pid', '?')}, started {holder.get('started', '?')}); use another out_dir, "
                    f"or delete {self.path} if that run is gone") from None
            with os.fdopen(handle, "w") as out:
                out.write(json.dumps(mine))
            self.held = True
            return self
        raise OutDirInUse(f"cannot take the lock {self.path}: it keeps reappearing")

    def release(self) -> None:
        """Remove the lock if this process holds it."""
        if self.held and _read_lock(self.path).get("pid") == os.getpid():
            self.path.unlink(missing_ok=True)
        self.held = False


def remove_stale_temps(out_dir: str | os.PathLike) -> list[Path]:
    """Delete temp files that killed writers left in out_dir and its checkpoints/ (call with the lock held)."""
    removed = []
    for directory in (Path(out_dir), Path(out_dir) / "checkpoints"):
        if not directory.is_dir():
            continue
        for pattern in TEMP_PATTERNS:
            for path in directory.glob(pattern):
                path.unlink(missing_ok=True)
                removed.append(path)
    if removed:
        log.warning("removed %d temp file(s) left by an interrupted run: %s", len(removed),
                    ", ".join(p.name for p in removed))
    return removed
