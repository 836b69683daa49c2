"""The studies' data, stored as a few xz-compressed tar archives with SHA-256 digests instead of thousands of
small files in the repository.

    python -m studies.archive unpack              # every study's archives, digests checked first
    python -m studies.archive unpack realdock     # one study
    python -m studies.archive verify              # digests only
    python -m studies.archive pack corpus         # rebuild a study's archives and its SHA256SUMS (maintainers)

Each study lists its archives in ``ARCHIVES`` below: an archive holds folders of the study (paths relative to the
study's own folder), and unpacking puts them back where the study's scripts read them. The unpacked folders are
ignored by git. Packing is deterministic (names sorted, owner 0, mtime 0), so the same files give the same digest.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import lzma
import os
import shutil
import sys
import tarfile
import tempfile
from pathlib import Path

STUDIES = Path(__file__).resolve().parent

# study -> archive name -> the folders (relative to the study) it holds
ARCHIVES = {
    "corpus": {
        "inputs": ["inputs"],
        "docked": ["docked/poses", "docked/records"],
        "qvina": ["qvina/poses"],
    },
    "realdock": {
        "inputs": ["inputs"],
        "docked": ["docked/poses", "docked/records"],
    },
}
DIGESTS = "SHA256SUMS"
CHUNK = 1 << 20


class ArchiveError(Exception):
    """A missing or altered archive, or an unsafe member: the message names the file."""


def archive_dir(study: str, root: Path = STUDIES) -> Path:
    """Where a study's archives and their digest file live."""
    return root / study / "archives"


def archive_path(study: str, name: str, root: Path = STUDIES) -> Path:
    """One archive's file."""
    return archive_dir(study, root) / f"{name}.tar.xz"


def sha256(path: Path) -> str:
    """The SHA-256 of a file, read in 1 MiB chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


def read_digests(study: str, root: Path = STUDIES) -> dict[str, str]:
    """The recorded digests of a study's archives: file name -> SHA-256."""
    path = archive_dir(study, root) / DIGESTS
    if not path.is_file():
        raise ArchiveError(f"{path}: no digest file (run `python -m studies.archive pack {study}`)")
    digests = {}
    for number, line in enumerate(path.read_text().splitlines(), 1):
        parts = line.split()
        if len(parts) != 2 or len(parts[0]) != 64:
            raise ArchiveError(f"{path}:{number}: expected '<sha256>  <file>', got {line!r}")
        digests[parts[1]] = parts[0]
    return digests


def verify(study: str, root: Path = STUDIES) -> list[Path]:
    """Check every archive of a study against its recorded digest; returns the archives checked."""
    digests = read_digests(study, root)
    checked = []
    for name in ARCHIVES[study]:
        path = archive_path(study, name, root)
        if path.name not in digests:
            raise ArchiveError(f"{path}: not listed in {archive_dir(study, root) / DIGESTS}")
        if not path.is_file():
            raise ArchiveError(f"{path}: missing (a clone without it is incomplete)")
        actual = sha256(path)
        if actual != digests[path.name]:
            raise ArchiveError(f"{path}: SHA-256 {actual} does not match the recorded {digests[path.name]}")
        checked.append(path)
    return checked


def _stamp(study: str, name: str, root: Path) -> Path:
    return root / study / f".unpacked-{name}"


def _safe_members(tar: tarfile.TarFile, path: Path, folders: list[str]):
    """Every member, refused unless it is a plain file or folder inside one of the archive's folders."""
    for member in tar.getmembers():
        name = member.name
        inside = any(name == folder or name.startswith(folder + "/") for folder in folders)
        if not inside or name.startswith("/") or ".." in Path(name).parts or not (member.isfile() or member.isdir()):
            raise ArchiveError(f"{path}: unexpected member {name!r} (only files under {', '.join(folders)})")
        yield member


def members(study: str, name: str, root: Path = STUDIES) -> list[str]:
    """The file names one archive holds (relative to the study), read from the archive itself."""
    with tarfile.open(archive_path(study, name, root), "r:xz") as tar:
        return [member.name for member in tar.getmembers() if member.isfile()]


def extract(path: Path, dest: Path, folders: list[str], keep=None) -> int:
    """Extract the files of one archive under ``dest``; ``keep(name)`` selects members (all by default).
    Returns the number of files written."""
    written = 0
    with tarfile.open(path, "r:xz") as tar:
        for member in _safe_members(tar, path, folders):
            if member.isdir() or (keep is not None and not keep(member.name)):
                continue
            target = dest / member.name
            target.parent.mkdir(parents=True, exist_ok=True)
            with tar.extractfile(member) as source, open(target, "wb") as out:
                shutil.copyfileobj(source, out)
            written += 1
    return written


def unpack(study: str, root: Path = STUDIES, force: bool = False, log=print) -> int:
    """Verify a study's archives, then put their folders in place. An archive whose stamp records the same digest
    is skipped; a target folder that exists without that stamp is refused unless ``force``. Returns files written."""
    digests = read_digests(study, root)
    verify(study, root)
    written = 0
    for name, folders in ARCHIVES[study].items():
        path = archive_path(study, name, root)
        stamp = _stamp(study, name, root)
        if stamp.is_file() and stamp.read_text().strip() == digests[path.name] and not force:
            log(f"[studies] {study}/{name}: already unpacked")
            continue
        present = [f for f in folders if (root / study / f).exists()]
        if present and not force and not stamp.is_file():
            raise ArchiveError(
                f"{root / study / present[0]}: exists and was not unpacked from {path.name}; "
                "move it away or pass --force to overwrite it"
            )
        staging = Path(tempfile.mkdtemp(prefix=f".unpack-{name}-", dir=root / study))
        try:
            count = extract(path, staging, folders)
            for folder in folders:
                target = root / study / folder
                if target.exists():
                    shutil.rmtree(target)
                target.parent.mkdir(parents=True, exist_ok=True)
                os.replace(staging / folder, target)
        finally:
            shutil.rmtree(staging, ignore_errors=True)
        stamp.write_text(digests[path.name] + "\n")
        written += count
        log(f"[studies] {study}/{name}: {count} files from {path.name}")
    return written


def _tar_bytes(base: Path, folders: list[str]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.GNU_FORMAT) as tar:
        files = sorted(p for folder in folders for p in (base / folder).rglob("*") if p.is_file())
        if not files:
            raise ArchiveError(f"{base}: nothing to pack under {', '.join(folders)}")
        for path in files:
            info = tarfile.TarInfo(path.relative_to(base).as_posix())
            info.size, info.mode, info.mtime = path.stat().st_size, 0o644, 0
            with open(path, "rb") as handle:
                tar.addfile(info, handle)
    return buffer.getvalue()


def pack(study: str, root: Path = STUDIES, log=print) -> dict[str, str]:
    """Write a study's archives from its unpacked folders (deterministically) and its digest file; each file is
    written to a temporary name beside it and renamed. Returns file name -> SHA-256."""
    out = archive_dir(study, root)
    out.mkdir(parents=True, exist_ok=True)
    digests = {}
    for name, folders in ARCHIVES[study].items():
        path = archive_path(study, name, root)
        data = lzma.compress(_tar_bytes(root / study, folders), preset=9)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_bytes(data)
        os.replace(tmp, path)
        digests[path.name] = sha256(path)
        _stamp(study, name, root).write_text(digests[path.name] + "\n")
        log(f"[studies] {path}: {len(data) / 1e6:.1f} MB")
    listing = out / (DIGESTS + ".tmp")
    listing.write_text("".join(f"{digest}  {file}\n" for file, digest in sorted(digests.items())))
    os.replace(listing, out / DIGESTS)
    return digests


def main(argv=None) -> int:
    """Command line: pack, unpack or verify the studies' archives."""
    parser = argparse.ArgumentParser(prog="python -m studies.archive", description=__doc__.split("\n\n")[0])
    parser.add_argument("action", choices=("unpack", "verify", "pack"))
    parser.add_argument("studies", nargs="*", help=f"which studies (default: all of {', '.join(ARCHIVES)})")
    parser.add_argument("--force", action="store_true", help="unpack over folders that exist")
    args = parser.parse_args(argv)
    unknown = sorted(set(args.studies) - set(ARCHIVES))
    if unknown:
        parser.error(f"unknown study {', '.join(unknown)}; the studies with archives: {', '.join(ARCHIVES)}")
    try:
        for study in args.studies or list(ARCHIVES):
            if args.action == "unpack":
                unpack(study, force=args.force)
            elif args.action == "verify":
                for path in verify(study):
                    print(f"[studies] {path}: OK")
            else:
                pack(study)
    except ArchiveError as error:
        print(f"[studies] error: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
