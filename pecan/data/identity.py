"""What a shard is, by content rather than by name: canonical identity, duplicate detection, freshness.

A shard's fingerprint is its stat record (device, inode, size, mtime, ctime) plus a BLAKE2b hash of its
whole file. The hash is what decides; the stat record is the shortcut that avoids re-reading an unchanged
file: the kernel updates ctime on every write and on every ``utime`` call, and a copy (``cp -p``, ``rsync
-t``, a restore from backup) is a new inode, so an equal stat record means equal bytes. When any stat field
differs, the file is hashed again and only a different hash makes a pack or derived index stale; a hash
that still matches is noted (with the new stat record) in a small ``.verified.json`` beside the pack or
index, so a ``touch`` or ``chmod`` costs one re-hash, not one per start.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from pathlib import Path
from typing import Iterable, Sequence

from pecan.runtime import fileio
from pecan.runtime.errors import DataError

log = logging.getLogger(__name__)

CHUNK_BYTES = 8 << 20
STAT_FIELDS = ("dev", "ino", "size", "mtime_ns", "ctime_ns")
# Hashes already computed by this process, keyed by the stat record they were computed under.
_HASHES: dict[tuple, str] = {}


def stat_record(path: Path) -> dict:
    """The stat fields that change whenever the file's bytes can have changed."""
    stat = os.stat(path)
    return {
        "dev": stat.st_dev,
        "ino": stat.st_ino,
        "size": stat.st_size,
        "mtime_ns": stat.st_mtime_ns,
        "ctime_ns": stat.st_ctime_ns,
    }


def content_hash(path: Path) -> str:
    """BLAKE2b (128-bit) of the whole file, read in 8 MiB chunks; memoised per stat record."""
    record = tuple(stat_record(path).values())
    if record in _HASHES:
        return _HASHES[record]
    digest = hashlib.blake2b(digest_size=16)
    with open(path, "rb") as handle:
        while chunk := handle.read(CHUNK_BYTES):
            digest.update(chunk)
    _HASHES[record] = digest.hexdigest()
    return _HASHES[record]


def forget_hashes() -> None:
    """Drop the hashes this process has memoised: the next fingerprint of every file reads it again (a
    benchmark times a cold start)."""
    _HASHES.clear()


def fingerprint(path: Path) -> dict:
    """Stat record plus content hash: what a pack or a derived index records about its source."""
    return {**stat_record(path), "blake2b": content_hash(path)}


def still_matches(path: Path, recorded: dict, confirmed: Path | None = None) -> bool:
    """Whether ``path`` still holds the bytes ``recorded`` (a ``fingerprint``) was taken from: an equal stat
    record (or one ``confirmed`` noted after an earlier re-hash) answers without reading; otherwise the size
    and then the content hash decide, and a match is noted in ``confirmed`` when it is writable."""
    if not isinstance(recorded, dict) or "blake2b" not in recorded:
        return False
    try:
        now = stat_record(path)
        if all(now[k] == recorded.get(k) for k in STAT_FIELDS):
            return True
        if now["size"] != recorded.get("size"):
            return False
        seen = {**now, "blake2b": recorded["blake2b"]}
        if confirmed is not None and _read_confirmed(confirmed).get(str(path)) == seen:
            return True
        if content_hash(path) != recorded["blake2b"]:
            return False
    except OSError:
        return False
    if confirmed is not None:
        _note_confirmed(confirmed, path, seen)
    return True


def confirmed_path(derived: Path) -> Path:
    """Where the stat records of re-hashed, unchanged sources of a pack or index are noted."""
    return derived.with_name(derived.name + ".verified.json")


def _read_confirmed(confirmed: Path) -> dict:
    try:
        value = json.loads(confirmed.read_text())
        return value if isinstance(value, dict) else {}
    except (OSError, ValueError):
        return {}


def _note_confirmed(confirmed: Path, path: Path, seen: dict) -> None:
    try:
        fileio.write_text(confirmed, fileio.json_text({**_read_confirmed(confirmed), str(path): seen}))
    except OSError:  # read-only beside a shared pack: the next start hashes again, still correct
        pass


def _describe(path: Path, names: dict[Path, str]) -> str:
    name = names.get(path)
    return f"{path} ({name})" if name and name != str(path) else str(path)


def find_duplicates(shards: Sequence[Path]) -> list[tuple[Path, Path, str]]:
    """(first, later, why) for every shard that is the same file (realpath or device+inode) or the same bytes
    as an earlier one; only files of equal size are hashed."""
    by_identity: dict[tuple, Path] = {}
    by_size: dict[int, list[Path]] = {}
    duplicates = []
    for shard in shards:
        stat = os.stat(shard)
        identity = (stat.st_dev, stat.st_ino)
        if identity in by_identity:
            duplicates.append((by_identity[identity], shard, f"the same file ({os.path.realpath(shard)})"))
            continue
        by_identity[identity] = shard
        by_size.setdefault(stat.st_size, []).append(shard)
    for group in (g for g in by_size.values() if len(g) > 1):
        first_by_hash: dict[str, Path] = {}
        for shard in group:
            digest = content_hash(shard)
            if digest in first_by_hash:
                duplicates.append((first_by_hash[digest], shard, "a byte-identical copy"))
            else:
                first_by_hash[digest] = shard
    return duplicates


def distinct_shards(
    shards: Iterable[Path], on_bad_sample: str, where: str, names: dict[Path, str] | None = None
) -> list[Path]:
    """Shards with every duplicate (same file or same content under another name) removed: an error naming
    both names, or under on_bad_sample: skip the later name dropped with a logged count."""
    shards = list(shards)
    names = names or {}
    duplicates = find_duplicates(shards)
    if not duplicates:
        return shards
    first, later, why = duplicates[0]
    message = (
        f"{where}: shard {_describe(later, names)} is {why} of shard {_describe(first, names)}; its samples "
        f"would be counted twice ({len(duplicates)} such shard(s))"
    )
    if on_bad_sample != "skip":
        raise DataError(message + "; list each shard once (remove the link or copy)")
    log.warning("%s; dropping %d duplicate shard name(s)", message, len(duplicates))
    dropped = {later for _, later, _ in duplicates}
    return [s for s in shards if s not in dropped]
