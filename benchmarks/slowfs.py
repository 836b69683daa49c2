"""A parallel-file-system stand-in: a FUSE passthrough view of a real directory whose metadata is served slowly,
by one server for all clients.

    python -m benchmarks.slowfs SOURCE MOUNTPOINT --latency-ms 1      # mount until Ctrl-C

Every metadata operation the kernel sends (getattr, which is also how a path look-up reaches the file system,
open, create, release, readdir, access, statfs and the namespace changes: mkdir, unlink, rename, ...) waits
``latency`` seconds while holding one lock: the operations of every client process queue for that single
"metadata server", as they do on Lustre's MDS or GPFS's token server. Data (read, write, flush, fsync) passes
straight through, without latency and without the lock, on FUSE's worker threads. The kernel is told to cache
nothing (entry, attribute and negative time-outs of 0), so each look-up and stat reaches the server; the page
cache still holds file data between opens of a mapped file, as a real client's does.

The server runs in a background process (``SlowFS`` as a context manager) and counts each operation; it is
unmounted with ``fusermount3 -u`` (lazily when busy) when the context exits, error or not. ``unavailable()``
says why it cannot run here (no /dev/fuse, no fusermount3, the ``bench`` extra's mfusepy or libfuse3 missing).
"""

from __future__ import annotations

import argparse
import ctypes
import errno
import mmap
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from pathlib import Path
from typing import Optional

METADATA_OPS = (
    "getattr",
    "open",
    "create",
    "release",
    "readdir",
    "access",
    "statfs",
    "readlink",
    "mkdir",
    "rmdir",
    "unlink",
    "rename",
    "truncate",
    "chmod",
    "chown",
    "utimens",
    "symlink",
    "link",
    "mknod",
)
DATA_OPS = ("read", "write")
COUNTED = METADATA_OPS + DATA_OPS
AUTO_INVAL_DATA = 1 << 12  # libfuse3's FUSE_CAP_AUTO_INVAL_DATA
NO_CACHE = {"attr_timeout": 0, "entry_timeout": 0, "negative_timeout": 0}


class SlowFSUnavailable(RuntimeError):
    """FUSE cannot mount here (the reason says why)."""


def unavailable() -> Optional[str]:
    """Why the stand-in cannot mount on this machine, or None when it can try."""
    if not os.path.exists("/dev/fuse"):
        return "no /dev/fuse (the FUSE kernel module is not available)"
    if shutil.which("fusermount3") is None:
        return "fusermount3 not found (Debian package fuse3)"
    try:
        import mfusepy  # noqa: F401
    except ImportError:
        return "mfusepy is not installed (pip install -e '.[bench]')"
    except (OSError, EnvironmentError) as err:  # the binding loads libfuse at import
        return f"libfuse could not be loaded ({err}; Debian package fuse3)"
    return None


def _passthrough_class():
    """The passthrough Operations class (built on first use, so importing this module never needs mfusepy)."""
    import mfusepy

    class Passthrough(mfusepy.Operations):
        """Each call of a metadata operation sleeps ``latency`` under one lock; data operations pass through."""

        use_ns = True

        def __init__(self, root: str, latency: float, counts) -> None:
            self.root = os.path.realpath(root)
            self.latency = latency
            self.counts = counts
            self.server = threading.Lock()
            self.slot = {name: i for i, name in enumerate(COUNTED)}

        def init_with_config(self, conn, config) -> None:
            # Without the kernel's auto_inval_data, a read inside the known file size does not first ask the
            # server for the file's attributes (attr_timeout is 0): data reads stay off the metadata server.
            if conn is not None:
                conn.want &= ~AUTO_INVAL_DATA

        def _full(self, path: str) -> str:
            return os.path.join(self.root, path.lstrip("/"))

        def _metadata(self, name: str) -> None:
            # Called with self.server held: one operation at a time for every client, like one MDS thread.
            self.counts[self.slot[name]] += 1
            if self.latency > 0:
                time.sleep(self.latency)

        def getattr(self, path, fh=None):
            with self.server:
                self._metadata("getattr")
                st = os.lstat(self._full(path)) if fh is None else os.fstat(fh)
            keys = ("st_mode", "st_nlink", "st_uid", "st_gid", "st_size", "st_ino", "st_dev", "st_blocks")
            attrs = {key: getattr(st, key) for key in keys}
            attrs.update(st_atime=st.st_atime_ns, st_mtime=st.st_mtime_ns, st_ctime=st.st_ctime_ns)
            return attrs

        def open(self, path, flags):
            with self.server:
                self._metadata("open")
                return os.open(self._full(path), flags)

        def create(self, path, mode, fi=None):
            with self.server:
                self._metadata("create")
                return os.open(self._full(path), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)

        def release(self, path, fh):
            with self.server:
                self._metadata("release")
                os.close(fh)
            return 0

        def readdir(self, path, fh):
            with self.server:
                self._metadata("readdir")
                return [".", "..", *os.listdir(self._full(path))]

        def access(self, path, amode):
            with self.server:
                self._metadata("access")
                if not os.access(self._full(path), amode):
                    raise mfusepy.FuseOSError(errno.EACCES)
            return 0

        def statfs(self, path):
            with self.server:
                self._metadata("statfs")
                st = os.statvfs(self._full(path))
            keys = ("f_bavail", "f_bfree", "f_blocks", "f_bsize", "f_favail", "f_ffree", "f_files", "f_flag")
            return {key: getattr(st, key) for key in (*keys, "f_frsize", "f_namemax")}

        def readlink(self, path):
            with self.server:
                self._metadata("readlink")
                return os.readlink(self._full(path))

        def mkdir(self, path, mode):
            with self.server:
                self._metadata("mkdir")
                os.mkdir(self._full(path), mode)
            return 0

        def rmdir(self, path):
            with self.server:
                self._metadata("rmdir")
                os.rmdir(self._full(path))
            return 0

        def unlink(self, path):
            with self.server:
                self._metadata("unlink")
                os.unlink(self._full(path))
            return 0

        def rename(self, old, new):
            with self.server:
                self._metadata("rename")
                os.rename(self._full(old), self._full(new))
            return 0

        def truncate(self, path, length, fh=None):
            with self.server:
                self._metadata("truncate")
                if fh is None:
                    os.truncate(self._full(path), length)
                else:
                    os.ftruncate(fh, length)
            return 0

        def chmod(self, path, mode):
            with self.server:
                self._metadata("chmod")
                os.chmod(self._full(path), mode)
            return 0

        def chown(self, path, uid, gid):
            with self.server:
                self._metadata("chown")
                os.chown(self._full(path), uid, gid)
            return 0

        def utimens(self, path, times=None):
            with self.server:
                self._metadata("utimens")
                os.utime(self._full(path), ns=times)
            return 0

        def symlink(self, target, source):
            with self.server:
                self._metadata("symlink")
                os.symlink(source, self._full(target))
            return 0

        def link(self, target, source):
            with self.server:
                self._metadata("link")
                os.link(self._full(source), self._full(target))
            return 0

        def mknod(self, path, mode, dev):
            with self.server:
                self._metadata("mknod")
                os.mknod(self._full(path), mode, dev)
            return 0

        def read(self, path, size, offset, fh):
            self.counts[self.slot["read"]] += 1  # a data op: no latency, no server lock (the count may race)
            return os.pread(fh, size, offset)

        def write(self, path, data, offset, fh):
            self.counts[self.slot["write"]] += 1
            return os.pwrite(fh, data, offset)

        def flush(self, path, fh):
            return 0

        def fsync(self, path, datasync, fh):
            os.fdatasync(fh) if datasync else os.fsync(fh)
            return 0

    return Passthrough


def counters_over(path: Path):
    """The shared int64 counters, one per counted operation, mapped from a small file (both processes map it)."""
    with open(path, "r+b") as handle:
        mapping = mmap.mmap(handle.fileno(), 8 * len(COUNTED))
    return (ctypes.c_int64 * len(COUNTED)).from_buffer(mapping)


def serve(source: str, mountpoint: str, latency: float, counts_file: Path) -> None:
    """Mount and serve in the foreground until unmounted (runs in the background process)."""
    import mfusepy

    warnings.simplefilter("ignore", DeprecationWarning)
    operations = _passthrough_class()(source, latency, counters_over(counts_file))
    mfusepy.FUSE(operations, mountpoint, foreground=True, fsname="slowfs", **NO_CACHE)


class SlowFS:
    """``with SlowFS(source, mountpoint, latency=0.001) as fs:`` — ``mountpoint`` shows ``source`` through the
    slow metadata server until the block ends; ``fs.counts()`` are the operations it served so far."""

    def __init__(self, source, mountpoint, latency: float, mount_timeout: float = 20.0) -> None:
        self.source = Path(source).resolve()
        self.mountpoint = Path(mountpoint).absolute()
        self.latency = latency
        self.mount_timeout = mount_timeout
        self._process: Optional[subprocess.Popen] = None
        self._scratch = Path(tempfile.mkdtemp(prefix="slowfs-"))
        self._log = self._scratch / "server.log"
        counts_file = self._scratch / "counts"
        counts_file.write_bytes(bytes(8 * len(COUNTED)))
        self._counts = counters_over(counts_file)

    def __enter__(self) -> "SlowFS":
        reason = unavailable()
        if os.path.ismount(self.mountpoint):
            reason = f"{self.mountpoint} is already a mount point"
        if reason:
            shutil.rmtree(self._scratch, ignore_errors=True)
            raise SlowFSUnavailable(reason)
        self.mountpoint.mkdir(parents=True, exist_ok=True)
        command = [sys.executable, __file__, "--serve", str(self._scratch / "counts")]
        command += [str(self.source), str(self.mountpoint), "--latency-ms", repr(self.latency * 1000)]
        with open(self._log, "wb") as log:
            self._process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        try:
            self._wait_mounted()
        except BaseException:
            self.unmount()
            raise
        return self

    def _wait_mounted(self) -> None:
        deadline = time.monotonic() + self.mount_timeout
        while not os.path.ismount(self.mountpoint):
            if self._process.poll() is not None:
                log = self._log.read_text(errors="replace").strip()[-2000:]
                raise SlowFSUnavailable(
                    f"FUSE mount of {self.mountpoint} failed (exit code {self._process.returncode}): {log}"
                )
            if time.monotonic() > deadline:
                raise SlowFSUnavailable(f"FUSE mount of {self.mountpoint} not up after {self.mount_timeout:.0f} s")
            time.sleep(0.02)

    def __exit__(self, *exc) -> None:
        self.unmount()

    def unmount(self) -> None:
        """Unmount (lazily if a process still holds a file open there) and stop the server."""
        if self._process is not None and os.path.ismount(self.mountpoint):
            done = subprocess.run(["fusermount3", "-u", str(self.mountpoint)], capture_output=True)
            if done.returncode != 0:  # busy: detach now, and stop the server (open handles then fail ENOTCONN)
                subprocess.run(["fusermount3", "-u", "-z", str(self.mountpoint)], capture_output=True)
                self._process.terminate()
        if self._process is not None:
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
        shutil.rmtree(self._scratch, ignore_errors=True)

    def counts(self) -> dict[str, int]:
        """Operations served since the mount (or the last reset), by name."""
        return {name: int(self._counts[i]) for i, name in enumerate(COUNTED)}

    def metadata_ops(self) -> int:
        """Metadata operations served since the mount (or the last reset)."""
        return sum(self._counts[i] for i, name in enumerate(COUNTED) if name in METADATA_OPS)

    def reset(self) -> None:
        """Zero the counters."""
        for i in range(len(COUNTED)):
            self._counts[i] = 0


def main(argv=None) -> int:
    """Mount SOURCE at MOUNTPOINT until interrupted."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("source")
    parser.add_argument("mountpoint")
    parser.add_argument("--latency-ms", type=float, default=1.0, help="milliseconds each metadata op waits")
    parser.add_argument("--serve", default="", help=argparse.SUPPRESS)  # the background process: its counts file
    args = parser.parse_args(argv)
    if args.serve:
        serve(args.source, args.mountpoint, args.latency_ms / 1000, Path(args.serve))
        return 0
    with SlowFS(args.source, args.mountpoint, args.latency_ms / 1000) as fs:
        print(f"{args.source} at {args.mountpoint}, {args.latency_ms} ms per metadata op; Ctrl-C unmounts", flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass
        print(fs.counts(), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
