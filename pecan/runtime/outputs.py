"""Where a command writes never is what it reads: every ``--out`` is checked against the command's inputs
and its other outputs before anything is read or written.

Paths are compared as ``os.path.realpath`` resolves them (symlinks, ``..``, relative to the working
directory), so ``--out best.pt``, ``--out ./run/../best.pt`` and a symlink to the checkpoint are all the
checkpoint. A clash is a ConfigError (exit 2) naming the option, the path and what it would overwrite. Imports
nothing of PECAN's but the error classes. An output that cannot be written at all (a directory, a read-only
place) is a ConfigError too (``check_writable``).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from pecan.runtime.errors import ConfigError

Named = tuple[str, "str | os.PathLike"]
"""(what it is, path): e.g. ("the checkpoint", "run/best.pt")."""


def real(path: str | os.PathLike) -> str:
    """The path as the file system resolves it."""
    return os.path.realpath(os.fspath(path))


def check_outputs(command: str, outputs: Iterable[Named], inputs: Iterable[Named]) -> None:
    """ConfigError when an output resolves to an input (file or directory) or to another output."""
    inputs = [(what, path) for what, path in inputs if path not in (None, "")]
    seen: dict[str, str] = {}
    for what, path in outputs:
        where = real(path)
        for input_what, input_path in inputs:
            if real(input_path) == where:
                raise ConfigError(
                    f"{command}: {what} {path} is {input_what} ({input_path}): it would be overwritten; "
                    f"write the output elsewhere"
                )
        if where in seen:
            raise ConfigError(
                f"{command}: {what} {path} is also where {seen[where]} goes: one would overwrite the other; "
                f"choose another --out"
            )
        seen[where] = what


def looks_like_index(path: Path) -> bool:
    """Whether ``path`` is a CSV whose header names ``pdbid`` and ``poseid`` (a PECAN index CSV)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            header = handle.readline()
    except OSError:
        return False
    columns = {c.strip() for c in header.split(",")}
    return {"pdbid", "poseid"} <= columns


def index_csvs_in(directory: str | os.PathLike) -> list[Named]:
    """Every index CSV directly in ``directory`` (a data directory's labelled index), as inputs."""
    if not directory or not Path(directory).is_dir():
        return []
    return [("an index CSV of the data", p) for p in sorted(Path(directory).glob("*.csv")) if looks_like_index(p)]


def manifest_files(rows, columns: Iterable[str] = ("receptor", "poses", "crystal_ligand")) -> list[Named]:
    """The files a manifest frame names (paths as given: already resolved by the caller), as inputs."""
    named: list[Named] = []
    for column in columns:
        if column in rows:
            named.extend((f"a manifest {column}", p) for p in rows[column] if isinstance(p, str) and p.strip())
    return named


def check_writable(command: str, outputs: Iterable[Named]) -> None:
    """ConfigError (exit 2) naming the real cause when an output cannot be written where it is asked to go: it
    is a directory, a folder on its way is a file, or its directory refuses a new file (no permission, a
    read-only file system, ``/proc``). Checked by creating and removing one empty file in the nearest
    directory that exists, before any work."""
    probed: set[str] = set()
    for what, path in outputs:
        path = Path(path)
        if path.is_dir():
            advice = (
                f"name a file (e.g. {path / 'scored.sdf'})" if what == "--out" else "move it or choose another --out"
            )
            raise ConfigError(f"{command}: {what} {path} is a directory; {advice}")
        folder = path.parent
        while not folder.exists() and folder != folder.parent:
            folder = folder.parent
        if not folder.is_dir():
            raise ConfigError(f"{command}: {what} {path} cannot be written: {folder} is a file, not a directory")
        if real(folder) not in probed:
            _probe(command, what, path, folder)
            probed.add(real(folder))


def _probe(command: str, what: str, path: Path, folder: Path) -> None:
    """Create and remove an empty file in ``folder``: ConfigError with the OS's reason when it cannot be."""
    import errno
    import tempfile

    try:
        handle, probe = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".probe", dir=folder)
    except OSError as err:
        reasons = {errno.EROFS: "read-only file system", errno.EACCES: "permission denied"}
        reason = reasons.get(err.errno, err.strerror or str(err))
        code = errno.errorcode.get(err.errno, "?") if err.errno else "no errno"
        raise ConfigError(
            f"{command}: {what} {path} cannot be written: {folder} does not accept new files ({reason}, {code})"
        ) from err
    os.close(handle)
    os.unlink(probe)
