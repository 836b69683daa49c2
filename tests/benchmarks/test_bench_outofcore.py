"""benchmarks/bench_outofcore.py: the memory cgroup that bounds a reader's page cache, and the skip (with its
reason) where no cgroup can be made."""

import os
import subprocess
import sys

import pytest

from benchmarks import bench_outofcore


def test_without_a_memory_cgroup_it_says_why_and_writes_nothing(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(bench_outofcore, "CGROUP_ROOT", tmp_path / "memory")
    out = tmp_path / "result.json"
    assert bench_outofcore.main(["--data", str(tmp_path / "data"), "--out", str(out)]) == 0
    assert f"skipped: no cgroup v1 memory controller at {tmp_path / 'memory'}" in capsys.readouterr().out
    assert not out.exists() and not (tmp_path / "data").exists()


@pytest.mark.slow
def test_a_reader_in_the_cgroup_keeps_no_more_than_its_limit(tmp_path):
    reason = bench_outofcore.cgroup_unavailable()
    if reason:
        pytest.skip(reason)
    data = tmp_path / "big.bin"
    with open(data, "wb") as stream:
        for _ in range(64):
            stream.write(os.urandom(1 << 20))
        stream.flush()
        os.fsync(stream.fileno())
        os.posix_fadvise(stream.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)
    cgroup = bench_outofcore.MemoryCgroup(f"pecan-test-{os.getpid()}", 32)
    try:
        script = (
            "import sys\n"
            "def read_bytes():\n    return int(open('/proc/self/io').read().split('read_bytes:')[1].split()[0])\n"
            "before = read_bytes()\n"
            "for _ in range(2):\n    with open(sys.argv[1], 'rb') as f:\n"
            "        while f.read(1 << 20):\n            pass\n"
            "print(read_bytes() - before)"
        )
        run = subprocess.run(
            [sys.executable, "-c", script, str(data)], capture_output=True, text=True, preexec_fn=cgroup.enter
        )
        assert run.returncode == 0, run.stderr
        peak = cgroup.peak_bytes()
    finally:
        cgroup.remove()
    if int(run.stdout) == 0:
        pytest.skip("this file system does not report block reads in /proc/self/io (e.g. tmpfs)")
    # Both passes came from disk: the 64 MiB did not stay cached in the 32 MiB group (uncapped, the second
    # pass would find it in the page cache).
    assert int(run.stdout) >= 2 * (64 << 20)
    assert peak <= 32 << 20
