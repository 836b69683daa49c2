"""Where a command writes never is what it reads: every ``--out`` is checked against the command's inputs
and its other outputs before anything is read or written.

Paths are compared as ``os.path.realpath`` resolves them (symlinks, ``..``, relative to the working
directory), so ``--out best.pt``, ``--out ./run/../best.pt`` and a symlink to the checkpoint are all the
checkpoint. A clash is a ConfigError (exit 2) naming the option, the path and what it would overwrite. Imports
nothing of PECAN's but the error classes.
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
