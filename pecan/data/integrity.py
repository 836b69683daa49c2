"""Derived files check their own bytes: checksums written with them, verified before they are used.

Packs. A pack's fixed prefix carries the CRC-32 of its JSON header, and the header carries the payload's size and
the CRC-32 of every array. Before a pack is used (rank 0 when it looks the pack up, each other node's leader
when it confirms rank 0's choice, the stage step for a staged copy) the file's size must match and every
checksum must hold; every process that maps a pack checks the size and the header again (a stat and a small
read). A pack whose bytes changed after it was written (an edit in place, a partial copy, a truncation, bit
rot) is removed with a warning naming it, so that it is rebuilt. Where it cannot be removed (a shared
read-only cache) it is passed over, with a warning, when a directory looked in before it accepts the rebuilt
pack (found first from then on), and refused with an error naming it otherwise: its owner must repack it,
or the user point ``data.cache_dir`` at a directory of their own.

CRC-32 (zlib) is the cheapest checksum in the standard library: 2.0 GB/s on one core of an Intel Xeon,
against 1.5 for Adler-32, 1.0 for SHA-1 and SHA-256, 0.8 for BLAKE2b and 0.6 for MD5. It detects every
error burst up to 32 bits and any other change with probability 1 - 2^-32; it is no defence against a
deliberate forger, but whoever can write the cache could write a matching checksum of any kind.

Derived index CSVs. The sidecar that names the shards an index was derived from also holds the BLAKE2b hash
of the CSV itself (pecan.data.identity.content_hash; an index is small, so the hash costs milliseconds). A CSV
that no longer matches it is removed and derived again, or refused where it cannot be removed, as a pack is.
"""

from __future__ import annotations

import logging
import os
import tempfile
import zlib
from pathlib import Path
from typing import Sequence

import numpy as np

from pecan.runtime.errors import DataError
from pecan.runtime.fileio import describe_error

log = logging.getLogger(__name__)

CHUNK_BYTES = 8 << 20


class CorruptFile(DataError):
    """A derived file whose bytes are not those it was written with: truncated, or failing a checksum."""


def array_crc32(array: np.ndarray) -> int:
    """CRC-32 of an array's bytes in C order (what the pack stores)."""
    return zlib.crc32(np.ascontiguousarray(array).reshape(-1).view(np.uint8))


def header_crc32(blob: bytes) -> int:
    """CRC-32 of the header's JSON text."""
    return zlib.crc32(blob)


def check_header(path: Path, blob: bytes, expected_length: int, expected_crc: int) -> None:
    """Raise CorruptFile unless the header text read is whole and matches its checksum."""
    if len(blob) != expected_length or header_crc32(blob) != expected_crc:
        raise CorruptFile(f"pack {path}: its header fails its checksum (the file was changed or cut short)")


def check_size(path: Path, header: dict) -> None:
    """Raise CorruptFile unless the file is exactly as long as its header says (a stat, no read)."""
    expected = header["data_start"] + header["payload_bytes"]
    size = os.stat(path).st_size
    if size != expected:
        raise CorruptFile(f"pack {path} is {size} bytes where its header says {expected} (truncated or partly copied)")


def _stream_crc32(handle, nbytes: int) -> int:
    crc, left = 0, nbytes
    while left > 0:
        chunk = handle.read(min(CHUNK_BYTES, left))
        if not chunk:
            break
        crc = zlib.crc32(chunk, crc)
        left -= len(chunk)
    return crc


def verify(path: Path, header: dict) -> None:
    """Raise CorruptFile naming ``path`` and the first array whose bytes fail their checksum (one read of
    the whole file)."""
    check_size(path, header)
    with open(path, "rb") as handle:
        for name, spec in header["arrays"].items():
            nbytes = int(np.prod(spec["shape"], dtype=np.int64)) * np.dtype(spec["dtype"]).itemsize
            handle.seek(header["data_start"] + spec["offset"])
            if _stream_crc32(handle, nbytes) != spec.get("crc32"):
                raise CorruptFile(
                    f"pack {path}: array '{name}' fails its checksum (its bytes changed after the pack was "
                    "written: an edit in place, a partial copy or bit rot)"
                )


REPACK = "have whoever owns that directory repack it (`pecan pack CONFIG.yaml`) or delete the file"


def discard(path: Path, err: CorruptFile, earlier: Sequence[Path] = (), remedy: str = REPACK) -> None:
    """Remove a corrupt derived file so that it is rebuilt, with a warning naming it. Where it cannot be
    removed (a read-only shared cache) it is passed over when a directory ``earlier`` in the lookup chain
    accepts the rebuilt file (found first from then on), and refused otherwise: a DataError naming it."""
    try:
        path.unlink()
    except FileNotFoundError:
        return
    except OSError as unlink_err:
        reason = describe_error(path.parent, unlink_err)
        writable = next((d for d in earlier if accepts_writes(d)), None)
        if writable is None:
            raise DataError(
                f"{err}; it cannot be removed ({reason}) and no directory before it in the lookup chain accepts "
                f"a rebuilt one, so it is refused: {remedy}"
            ) from err
        log.warning("%s; it cannot be removed (%s): rebuilt in %s, which is looked in first", err, reason, writable)
        return
    log.warning("%s; removed it, it is rebuilt", err)


def accepts_writes(directory: Path) -> bool:
    """Whether a file can be created in ``directory`` (created if missing): decided by trying."""
    try:
        directory.mkdir(parents=True, exist_ok=True)
        handle, name = tempfile.mkstemp(dir=directory, prefix=".pecan-probe-")
        os.close(handle)
        os.unlink(name)
    except OSError:
        return False
    return True
