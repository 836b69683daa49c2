"""Where PECAN puts what it derives from the data (index CSVs, packs): one chain for every kind.

    1. the explicit directory (data.index_dir / data.cache_dir, or their env vars PECAN_INDEX_CSV_DIR /
       PECAN_CACHE_DIR, folded into the config),
    2. beside the data,
    3. the per-user cache: $XDG_CACHE_HOME/pecan, else ~/.cache/pecan,
    4. the per-user temp dir: <system temp>/pecan-<uid>.

A writer tries each in turn; any OSError (EACCES, EROFS, EDQUOT, ENOSPC, ...) moves on to the next with
one warning naming the reason. Readers look through the same chain. The chosen directory is logged once.
"""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, TypeVar

from pecan.runtime.fileio import describe_error

log = logging.getLogger(__name__)

T = TypeVar("T")
_REPORTED: set[tuple[str, str]] = set()


from pecan.runtime.errors import NoWritableLocation  # noqa: E402,F401  (re-exported)


@dataclass(frozen=True)
class Location:
    """One candidate directory and why it is in the chain."""

    directory: Path
    origin: str


def absolute(path: str | os.PathLike) -> Path:
    """An absolute path naming the file the OS opens for ``path``: relative to the working directory, ``.`` and
    repeated separators dropped, and every ``..`` resolved against the real directory before it (the OS reads
    ``lnk/..`` as the parent of lnk's target; ``os.path.abspath`` would drop both as text and name another
    file). Symlinks after the last ``..`` are kept, not resolved into their target's directory."""
    text = os.fspath(path)
    text = text if os.path.isabs(text) else os.path.join(os.getcwd(), text)
    parts = text.split(os.sep)
    if ".." not in parts:
        return Path(os.path.normpath(text))  # only "." and "//" go: the same file for the OS
    last = len(parts) - parts[::-1].index("..")
    return Path(os.path.normpath(os.path.join(os.path.realpath(os.sep.join(parts[:last])), *parts[last:])))


def user_cache_root() -> Path:
    """$XDG_CACHE_HOME/pecan, else ~/.cache/pecan (the XDG base-directory convention)."""
    base = os.environ.get("XDG_CACHE_HOME", "").strip()
    return (Path(base) if base else Path.home() / ".cache") / "pecan"


def user_temp_root() -> Path:
    """<system temp>/pecan-<uid>: per user, so two users on one node never collide."""
    return Path(tempfile.gettempdir()) / f"pecan-{os.getuid()}"


def dataset_slug(directory: Path) -> str:
    """A per-dataset subdirectory name for the shared roots: readable name plus a hash of the full path."""
    digest = hashlib.sha256(str(absolute(directory)).encode()).hexdigest()[:10]
    return f"{absolute(directory).name or 'root'}-{digest}"


def chain(explicit: str, explicit_origin: str, beside: Path, subdir: str) -> list[Location]:
    """The candidate directories in order; ``subdir`` separates kinds and datasets under the shared roots."""
    out = [Location(absolute(explicit), explicit_origin)] if explicit else []
    out.append(Location(absolute(beside), "beside the data"))
    out.append(Location(user_cache_root() / subdir, "per-user cache"))
    out.append(Location(user_temp_root() / subdir, "per-user temp dir"))
    return out


def write_first(locations: list[Location], write: Callable[[Path], T], what: str) -> tuple[T, Location]:
    """Call ``write(directory)`` for each location until one succeeds; warn once per refused directory."""
    errors = []
    for location in locations:
        try:
            result = write(location.directory)
        except OSError as err:
            reason = describe_error(location.directory, err)
            errors.append(f"{location.origin} {reason}")
            _report_once(
                ("refused", str(location.directory)),
                logging.WARNING,
                "cannot write %s to %s (%s): %s; trying the next location",
                what,
                location.origin,
                location.directory,
                reason,
            )
            continue
        _report_once(
            (what, str(location.directory)), logging.INFO, "%s go to %s (%s)", what, location.directory, location.origin
        )
        return result, location
    raise NoWritableLocation(f"cannot write {what} anywhere: " + "; ".join(errors))


def _report_once(key: tuple[str, str], level: int, message: str, *args) -> None:
    if key not in _REPORTED:
        _REPORTED.add(key)
        log.log(level, message, *args)
