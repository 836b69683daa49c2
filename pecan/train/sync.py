"""Mirror a node-local run directory to shared storage: periodically and at exit (train.sync_dir).

Each changed file (checkpoints, epoch and run records, config, traces) is copied to a temp file inside
its destination directory and renamed into place, so a reader of the shared copy never sees half a file.
Files that are themselves half written (the atomic writer's ``.*.tmp`` files) are skipped.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path

from pecan.runtime import fileio
from pecan.train.run_dir import LOCK_NAME

log = logging.getLogger(__name__)


def sync_tree(source: Path, destination: Path) -> int:
    """Copy every file of ``source`` whose size or mtime differs from its copy under ``destination``."""
    copied = 0
    for path in sorted(p for p in source.rglob("*") if p.is_file()):
        if path.name.startswith(".") and path.name.endswith(".tmp"):
            continue
        if path.name.startswith(LOCK_NAME) and path.parent == source:
            continue  # the lock (and its takeover guard, temp files) belong to out_dir's live run only
        target = destination / path.relative_to(source)
        try:
            stat = path.stat()
            if target.exists() and (target.stat().st_size, target.stat().st_mtime_ns) == (
                stat.st_size,
                stat.st_mtime_ns,
            ):
                continue
            fileio.copy_file(path, target)
            copied += 1
        except FileNotFoundError:
            continue  # replaced or removed while we looked; the next sync takes the new one
    return copied


class OutputSync:
    """A background thread that syncs ``out_dir`` to ``sync_dir`` every ``minutes``, plus a final sync."""

    def __init__(self, out_dir: Path, sync_dir: Path, minutes: float) -> None:
        self.out_dir, self.sync_dir, self.seconds = Path(out_dir), Path(sync_dir), minutes * 60.0
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._loop, name="pecan-sync", daemon=True)

    def start(self) -> "OutputSync":
        """Begin periodic syncing."""
        self._thread.start()
        return self

    def sync(self) -> int:
        """One sync now; errors are logged, never raised (training must not die of a slow share)."""
        with self._lock:
            try:
                copied = sync_tree(self.out_dir, self.sync_dir)
            except OSError as err:
                log.warning("syncing %s to %s failed: %s", self.out_dir, self.sync_dir, err)
                return 0
        if copied:
            log.info("synced %d file(s) of %s to %s", copied, self.out_dir, self.sync_dir)
        return copied

    def _loop(self) -> None:
        while not self._stop.wait(self.seconds):
            self.sync()

    def close(self) -> int:
        """Stop the thread and sync a last time."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        return self.sync()
