"""Node-local staging: copy the files a job reads (packs, or shards for the HDF5 io modes) to fast local disk.

One process per node calls ``stage``. Each file is copied to a temp file inside the stage directory and
renamed into place (never renamed across devices), then a marker records the source's stat record and the
copy's; a later run whose sources and copies are unchanged reuses the staged copies without copying (a
copy changed in place is copied again), and a ``check`` of each copy's content (a pack's checksums) is run
on every copy used, fresh or reused: a reused copy that fails it is copied again. Any
failure (a copy error, a full disk) falls back to reading every file in place, with a warning: a job
never reads a half-staged set.

``stage_subset`` stages only the files one node reads in an epoch (under ``data.shuffle: block`` or
``window`` a node's ranks read a contiguous share of the epoch's shards), for data larger than the local disk.
"""

from __future__ import annotations

import hashlib
import json
import logging
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

from pecan.data.identity import stat_record
from pecan.data.locations import absolute
from pecan.runtime import fileio

log = logging.getLogger(__name__)


@dataclass
class StageReport:
    """Where each source is read from, and what staging cost."""

    mapping: dict[str, str] = field(default_factory=dict)
    seconds: float = 0.0
    bytes_copied: int = 0
    files_copied: int = 0
    files_reused: int = 0
    fallback: Optional[str] = None

    def record(self) -> dict:
        """The fields the first epoch's record carries."""
        return {
            "staging_s": self.seconds,
            "staging_bytes": self.bytes_copied,
            "staging_files_copied": self.files_copied,
            "staging_files_reused": self.files_reused,
            "staging_fallback": self.fallback,
        }


def staged_path(source: Path, stage_dir: Path) -> Path:
    """The staged copy's name: a hash of the source's full path keeps equal names from different dirs apart."""
    digest = hashlib.sha256(str(absolute(source)).encode()).hexdigest()[:10]
    return stage_dir / f"{digest}-{source.name}"


def _marker(staged: Path) -> Path:
    return staged.with_name(staged.name + ".staged.json")


def _marker_text(source: Path, fingerprint: dict, staged: Optional[Path] = None) -> str:
    copy = stat_record(staged) if staged is not None else None
    return json.dumps({"source": str(absolute(source)), **fingerprint, "copy": copy}, sort_keys=True)


def _is_current(source: Path, staged: Path, source_record: dict, check: Optional[Callable[[Path], bool]]) -> bool:
    try:
        current = _marker(staged).read_text() == _marker_text(source, source_record, staged)
    except OSError:
        return False
    if current and check is not None and not check(staged):
        log.warning("staged copy %s fails its content check; copying it again", staged)
        return False
    return current


def stage(sources: list[Path], stage_dir: str | Path, check: Optional[Callable[[Path], bool]] = None) -> StageReport:
    """Copy ``sources`` into ``stage_dir`` (reusing current copies that pass ``check``); on any failure read
    everything in place."""
    start = time.perf_counter()
    report = StageReport()
    stage_dir = absolute(stage_dir)
    try:
        todo = []
        for source in (Path(s) for s in sources):
            staged = staged_path(source, stage_dir)
            record = stat_record(source)
            report.mapping[str(source)] = str(staged)
            if _is_current(source, staged, record, check):
                report.files_reused += 1
            else:
                todo.append((source, staged, record))
        _check_space(stage_dir, todo)
        for source, staged, record in todo:
            _marker(staged).unlink(missing_ok=True)
            fileio.copy_file(source, staged)
            if check is not None and not check(staged):
                raise OSError(f"the staged copy {staged} of {source} fails its content check")
            fileio.write_text(_marker(staged), _marker_text(source, record, staged))
            report.bytes_copied += staged.stat().st_size
            report.files_copied += 1
    except OSError as err:
        report.fallback = str(err)
        report.mapping = {str(s): str(s) for s in sources}
        log.warning("staging to %s failed (%s); reading every file in place", stage_dir, err)
    report.seconds = time.perf_counter() - start
    if report.fallback is None:
        log.info(
            "staged %d file(s) to %s: %d copied (%.1f MiB, %.2fs), %d reused",
            len(report.mapping),
            stage_dir,
            report.files_copied,
            report.bytes_copied / 2**20,
            report.seconds,
            report.files_reused,
        )
    return report


def stage_subset(
    sources: list[Path], needed: set, stage_dir: str | Path, check: Optional[Callable[[Path], bool]] = None
) -> StageReport:
    """Stage only the ``needed`` sources (the packs a node's ranks read this epoch:
    ``ShardAwareSampler.shards_read``), so a data set larger than the local disk can be staged one share at a
    time; the others are read in place. Staged copies of the other sources (an earlier epoch's share) are
    removed first, so their space is free for this share's copies."""
    needed = {str(s) for s in needed}
    unknown = needed - {str(s) for s in sources}
    if unknown:
        raise ValueError(f"staging: {len(unknown)} needed file(s) are not sources of this job, e.g. {min(unknown)}")
    stage_dir = absolute(stage_dir)
    for source in (Path(s) for s in sources if str(s) not in needed):
        staged = staged_path(source, stage_dir)
        _marker(staged).unlink(missing_ok=True)
        staged.unlink(missing_ok=True)
    report = stage([Path(s) for s in sources if str(s) in needed], stage_dir, check)
    report.mapping.update({str(s): str(s) for s in sources if str(s) not in needed})
    return report


def _check_space(stage_dir: Path, todo: list[tuple[Path, Path, dict]]) -> None:
    """Refuse up front when the copies cannot fit (a copy that fills the disk would fail anyway, later)."""
    if not todo:
        return
    stage_dir.mkdir(parents=True, exist_ok=True)
    needed = sum(source.stat().st_size for source, _, _ in todo)
    free = shutil.disk_usage(stage_dir).free
    if needed > free:
        raise OSError(28, f"{stage_dir}: disk full (ENOSPC): {needed} bytes to stage, {free} free")
