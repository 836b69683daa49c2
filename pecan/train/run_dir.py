"""Run-directory integrity: one run per out_dir (the lock of pecan.runtime.dir_lock, which the data
preparation commands share) and stale temp files removed at start. Write errors naming the path come from
pecan.runtime.fileio.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

from pecan.runtime.dir_lock import (  # noqa: F401 (the names training and its tests use)
    HEARTBEAT_S,
    JOB_ID_VARS,
    LOCK_NAME,
    TAKEOVER_NAME,
    RunLock,
    check_out_dir,
    job_id,
    owner_record,
    process_start,
    stale_reason,
    unusable,
)
from pecan.runtime.errors import OutDirInUse, OutDirUnusable

log = logging.getLogger(__name__)

# Temp files of the atomic writers (mkstemp ".NAME.XXXX.tmp", config's ".NAME.tmp-PID").
TEMP_PATTERNS = (".*.tmp", ".*.tmp-*", LOCK_NAME + ".*.new")


def claim_out_dir(out_dir: Path, is_main: bool, stale_minutes: float = 10.0, force: bool = False):
    """Rank 0 locks out_dir (one run per directory) and removes stale temp files; every rank learns whether
    that worked, so a refused start stops all ranks instead of leaving them waiting. Returns rank 0's lock."""
    from pecan.runtime.collectives import broadcast_object

    lock, refusal = None, None
    if is_main:
        try:
            lock = RunLock(out_dir, stale_minutes * 60.0, force).acquire()
            remove_stale_temps(out_dir)
        except (OutDirInUse, OutDirUnusable) as err:
            refusal = (type(err).__name__, str(err))
    refusal = broadcast_object(refusal, what="out_dir_lock")
    if refusal:
        raise (OutDirInUse if refusal[0] == "OutDirInUse" else OutDirUnusable)(refusal[1])
    return lock


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
        log.warning(
            "removed %d temp file(s) left by an interrupted run: %s", len(removed), ", ".join(p.name for p in removed)
        )
    return removed
