"""benchmarks/slowfs.py: the FUSE stand-in shows a directory's files unchanged, charges every metadata operation its
latency on one server for all clients, and always unmounts."""

import contextlib
import os
import threading
import time

import pytest

from benchmarks.slowfs import SlowFS, SlowFSUnavailable, unavailable

LATENCY = 0.005

pytestmark = pytest.mark.skipif(unavailable() is not None, reason=f"slowfs cannot mount here: {unavailable()}")


@pytest.fixture
def source(tmp_path):
    src = tmp_path / "src"
    (src / "sub").mkdir(parents=True)
    (src / "a.bin").write_bytes(os.urandom(300_000))
    (src / "sub" / "b.txt").write_text("pose 1\npose 2\n")
    return src


@pytest.fixture
def mounted(source, tmp_path):
    try:
        with SlowFS(source, tmp_path / "mnt", latency=LATENCY) as fs:
            yield fs
    except SlowFSUnavailable as err:  # e.g. in a container without CAP_SYS_ADMIN
        pytest.skip(f"slowfs cannot mount here: {err}")


def open_close(path, times):
    for _ in range(times):
        with open(path, "rb"):
            pass


def test_files_read_through_the_mount_equal_the_originals(source, mounted):
    mnt = mounted.mountpoint
    assert os.path.ismount(mnt)
    assert sorted(os.listdir(mnt)) == ["a.bin", "sub"]
    assert (mnt / "a.bin").read_bytes() == (source / "a.bin").read_bytes()
    assert (mnt / "sub" / "b.txt").read_text() == "pose 1\npose 2\n"
    with open(mnt / "a.bin", "rb") as handle:
        handle.seek(123_457)
        assert handle.read(1000) == (source / "a.bin").read_bytes()[123_457:124_457]
    (mnt / "sub" / "new.txt").write_text("written through")
    os.rename(mnt / "sub" / "new.txt", mnt / "sub" / "moved.txt")
    assert (source / "sub" / "moved.txt").read_text() == "written through"
    counts = mounted.counts()
    assert counts["read"] > 0 and counts["readdir"] >= 1 and counts["rename"] == 1


def test_n_opens_cost_at_least_n_latencies_and_are_each_seen(mounted):
    mounted.reset()
    start = time.perf_counter()
    open_close(mounted.mountpoint / "sub" / "b.txt", 40)
    elapsed = time.perf_counter() - start
    counts = mounted.counts()
    assert counts["open"] == 40
    assert counts["getattr"] >= 40  # the kernel caches no look-up: each open's path walk reaches the server
    assert elapsed >= 40 * LATENCY
    assert elapsed >= mounted.metadata_ops() * LATENCY * 0.99  # every op counted also waited (sleep >= latency)


def test_one_metadata_server_for_all_clients(mounted):
    # Two clients opening at once still queue on one server: together no faster than one after the other.
    mounted.reset()
    path = mounted.mountpoint / "a.bin"
    clients = [threading.Thread(target=open_close, args=(path, 20)) for _ in range(2)]
    start = time.perf_counter()
    for client in clients:
        client.start()
    for client in clients:
        client.join()
    elapsed = time.perf_counter() - start
    assert mounted.counts()["open"] == 40
    assert elapsed >= mounted.metadata_ops() * LATENCY * 0.99


def test_unmounted_after_an_error_inside_the_block(source, tmp_path):
    mnt = tmp_path / "mnt"
    with pytest.raises(ZeroDivisionError):
        try:
            with SlowFS(source, mnt, latency=0.0):
                assert os.path.ismount(mnt)
                1 / 0
        except SlowFSUnavailable as err:
            pytest.skip(f"slowfs cannot mount here: {err}")
    assert not os.path.ismount(mnt)
    assert os.listdir(mnt) == []


def test_unmounted_while_a_file_is_still_open(source, tmp_path):
    mnt = tmp_path / "mnt"
    try:
        with SlowFS(source, mnt, latency=0.0):
            handle = open(mnt / "a.bin", "rb")
    except SlowFSUnavailable as err:
        pytest.skip(f"slowfs cannot mount here: {err}")
    assert not os.path.ismount(mnt)  # detached lazily: the server is gone, the open handle is dead
    with pytest.raises(OSError):
        handle.read()
    with contextlib.suppress(OSError):
        handle.close()


def test_a_mount_point_in_use_is_refused(source, mounted):
    with pytest.raises(SlowFSUnavailable, match="already a mount point"):
        with SlowFS(source, mounted.mountpoint, latency=0.0):
            pass
    assert os.path.ismount(mounted.mountpoint)
