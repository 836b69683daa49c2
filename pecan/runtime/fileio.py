"""The one atomic writer: a temp file in the destination directory, fsync, ``os.replace``.

Every file PECAN creates (packs, index CSVs, run records, checkpoints, config.yaml, staged copies) goes
through ``atomic_write``: readers see the old file or the new one, never half of it; a failure leaves no
temp file behind; the new file gets the mode ``open()`` would give it (0666 minus the umask), not
mkstemp's owner-only 0600, so teammates can share caches and read runs. A command that writes several files
as one result writes each to ``temp_beside`` its destination and renames them with ``commit_together``: all
of them replace their destinations, or none does.
"""

from __future__ import annotations

import errno
import json
import math
import os
import shutil
import tempfile
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any, Iterator, Optional

_UMASK: Optional[int] = None
_UMASK_LOCK = threading.Lock()


from pecan.runtime.errors import StorageError  # noqa: E402,F401  (re-exported: pecan.runtime.fileio.StorageError)


def _read_umask() -> int:
    # /proc reports the umask without changing it; elsewhere set-and-restore once, under a lock, because
    # os.umask is process-wide and another thread creating a file in between would get mode 0.
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    current = os.umask(0o022)
    os.umask(current)
    return current


def umask() -> int:
    """The process umask, read once."""
    global _UMASK
    with _UMASK_LOCK:
        if _UMASK is None:
            _UMASK = _read_umask()
        return _UMASK


def file_mode() -> int:
    """The mode ``open()`` gives a new file: 0666 minus the umask."""
    return 0o666 & ~umask()


def describe_error(path: Path | str, err: OSError) -> str:
    """'<path>: <reason> (errno NAME)', with "disk full" for ENOSPC and "quota exceeded" for EDQUOT."""
    reasons = {errno.ENOSPC: "disk full", errno.EDQUOT: "quota exceeded", errno.EROFS: "read-only file system"}
    reason = reasons.get(err.errno, err.strerror or str(err))
    name = errno.errorcode.get(err.errno, str(err.errno)) if err.errno else "no errno"
    return f"{path}: {reason} ({name})"


@contextmanager
def named_write_errors(path: str | os.PathLike) -> Iterator[None]:
    """Turn an OSError inside the block into a StorageError naming ``path`` and the errno."""
    try:
        yield
    except StorageError:
        raise
    except OSError as err:
        raise StorageError(err.errno, describe_error(path, err)) from err


@contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a fresh temp file beside ``path`` for a writer that wants a path (h5py, torch.save); when the
    block succeeds the file is fsynced, given the umask's mode and renamed onto ``path``.

    Any exception removes the temp file and leaves ``path`` untouched; an OSError is re-raised as
    ``StorageError`` naming ``path`` and the errno.
    """
    path = Path(path)
    tmp: Optional[str] = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        os.close(handle)
        yield Path(tmp)
        descriptor = os.open(tmp, os.O_RDONLY)
        try:
            os.fsync(descriptor)
        finally:
            os.close(descriptor)
        os.chmod(tmp, file_mode())
        os.replace(tmp, path)
        tmp = None
    except StorageError:
        raise
    except OSError as err:
        raise StorageError(err.errno, describe_error(path, err)) from err
    finally:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)


@contextmanager
def atomic_write(path: str | os.PathLike, mode: str = "wb") -> Iterator[IO]:
    """Yield a file open for writing (``mode``) that replaces ``path`` atomically when the block succeeds."""
    with atomic_path(path) as tmp, open(tmp, mode) as out:
        yield out


def finite_json(value: Any) -> Any:
    """``value`` with every non-finite float (NaN, inf; numpy's too) as None, through dicts, lists, tuples."""
    if isinstance(value, dict):
        return {k: finite_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite_json(v) for v in value]
    if getattr(value, "ndim", None) == 0 and hasattr(value, "item"):  # numpy scalars, 0-d arrays and tensors
        value = value.item()
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    return value


def json_text(value: Any, **options: Any) -> str:
    """The JSON every file PECAN writes holds: NaN and inf written as null (bare ``NaN`` is not JSON), then
    ``json.dumps(..., allow_nan=False)`` with ``options`` (indent, sort_keys, default)."""
    return json.dumps(finite_json(value), allow_nan=False, **options)


def write_text(path: str | os.PathLike, text: str) -> Path:
    """Atomically replace ``path`` with ``text``."""
    with atomic_write(path, "w") as out:
        out.write(text)
    return Path(path)


def write_csv(frame, path: str | os.PathLike) -> Path:
    """Atomically replace ``path`` with a pandas DataFrame as CSV (header, no index column)."""
    with atomic_write(path, "w") as out:
        frame.to_csv(out, index=False)
    return Path(path)


def copy_file(source: str | os.PathLike, destination: str | os.PathLike) -> Path:
    """Copy atomically into ``destination`` (temp file in its directory), keeping the source's mtime."""
    with open(source, "rb") as src, atomic_write(destination, "wb") as out:
        shutil.copyfileobj(src, out, 1 << 22)
    stat = os.stat(source)
    os.utime(destination, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    return Path(destination)


def move_into_place(source: str | os.PathLike, destination: str | os.PathLike) -> Path:
    """Rename a finished file (written in a temporary folder beside ``destination``) over ``destination``:
    readers see the old file or the new one. Both must be on one file system, as a temp folder inside the
    destination's directory is; errors name the path."""
    with named_write_errors(destination):
        os.replace(source, destination)
    return Path(destination)


def temp_beside(path: str | os.PathLike) -> Path:
    """A fresh, empty temp file in ``path``'s directory (created if missing), for ``commit_together``; an
    OSError is a StorageError naming ``path``."""
    path = Path(path)
    with named_write_errors(path):
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        os.close(handle)
    return Path(tmp)


def commit_together(pairs: list[tuple[Path, Path]]) -> None:
    """Rename each finished temp file onto its destination (``(temp, destination)`` pairs): all of them, or,
    when one cannot be, none. Every temp is fsynced and given the umask's mode first, and every destination
    checked (a directory refuses); a destination's earlier file is kept under a hard link (a copy where links
    are refused) until all are in place, and put back when a later one fails. On failure the temps are removed
    and a StorageError names the destination that failed."""
    saved: list[tuple[Path, Optional[Path]]] = []
    try:
        for temp, destination in pairs:
            with named_write_errors(destination):
                if destination.is_dir():
                    raise IsADirectoryError(errno.EISDIR, "is a directory", str(destination))
                _fsync_file(temp)
                os.chmod(temp, file_mode())
        for temp, destination in pairs:
            with named_write_errors(destination):
                saved.append((destination, _keep_earlier(destination)))
                os.replace(temp, destination)
    except BaseException as err:
        kept = _restore(saved)
        discard_temps([temp for temp, _ in pairs])
        if kept:  # the earlier file could not be put back: say where it is
            where = ", ".join(f"{destination} (its earlier file: {earlier})" for destination, earlier in kept)
            raise StorageError(errno.EIO, f"{err}; not put back: {where}") from err
        raise
    for _, earlier in saved:
        if earlier is not None:
            earlier.unlink(missing_ok=True)


def discard_temps(temps: list[Path]) -> None:
    """Remove temp files (those already renamed away are gone)."""
    for temp in temps:
        Path(temp).unlink(missing_ok=True)


def _fsync_file(path: Path) -> None:
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def _keep_earlier(destination: Path) -> Optional[Path]:
    """A second name for ``destination``'s current file (None when there is none)."""
    if not destination.exists():
        return None
    keep = temp_beside(destination.with_name(destination.name + ".earlier"))
    keep.unlink()
    try:
        os.link(destination, keep)
    except OSError:  # a file system without hard links: keep a copy
        shutil.copy2(destination, keep)
    return keep


def _restore(saved: list[tuple[Path, Optional[Path]]]) -> list[tuple[Path, Path]]:
    """Put every replaced destination back as it was (a new file where there was none is removed); the
    (destination, earlier file) pairs that could not be."""
    kept = []
    for destination, earlier in reversed(saved):
        try:
            if earlier is None:
                destination.unlink(missing_ok=True)
            else:
                os.replace(earlier, destination)
                earlier.unlink(missing_ok=True)  # a link to the file still there: rename left both names
        except OSError:
            if earlier is not None:
                kept.append((destination, earlier))
    return kept
