"""The automatic thread count lowered after a starved epoch, end to end: a real training run whose CPU is cut
by a real CPU cgroup quota (cgroup v1's cpu controller, as root) lowers its intra-op threads after the first
epoch, says so once, and records the lower count in the next epoch's record."""

import json
import os
import sys
import textwrap
import uuid
from pathlib import Path

import pytest

from tests.procs import clean_env, run_ok
from tests.train.helpers import tiny_run

CPU_CGROUPS = Path("/sys/fs/cgroup/cpu")

# The run's process joins the cgroup before torch starts its threads; the load average is read as idle, so the
# start takes the two threads the cores allow whatever else this machine (a parallel test run) is doing: the
# starvation comes from the quota alone.
WRAPPER = textwrap.dedent("""
    import os, sys
    with open(os.path.join(sys.argv[1], "cgroup.procs"), "w") as handle:
        handle.write(str(os.getpid()))
    os.getloadavg = lambda: (0.0, 0.0, 0.0)
    import main_app
    sys.exit(main_app.main(sys.argv[2:], prog="main_app.py"))
""")


@pytest.fixture
def quarter_core():
    """A CPU cgroup allowed a quarter of one core (skipped where cgroups cannot be made)."""
    group = CPU_CGROUPS / f"pecan-test-{uuid.uuid4().hex[:8]}"
    try:
        group.mkdir()
        (group / "cpu.cfs_period_us").write_text("100000")
        (group / "cpu.cfs_quota_us").write_text("25000")
    except OSError as err:
        pytest.skip(f"no CPU cgroup here ({CPU_CGROUPS}: {err.strerror}); needs root and cgroup v1's cpu controller")
    yield group
    for pid in filter(None, (group / "cgroup.procs").read_text().split()):
        (CPU_CGROUPS / "cgroup.procs").write_text(pid)
    group.rmdir()


@pytest.mark.slow
@pytest.mark.multiprocess
def test_a_starved_epoch_lowers_the_automatic_threads_for_the_next(tmp_path, quarter_core):
    if (os.cpu_count() or 1) < 2:
        pytest.skip("one CPU: the automatic count is already 1")
    path, _ = tiny_run(tmp_path)
    env = clean_env()
    env.pop("OMP_NUM_THREADS")  # sized to the cores, not from the environment
    settings = ["--set", "train.epochs=3", "--set", f"train.out_dir={tmp_path / 'run'}"]
    command = [sys.executable, "-u", "-c", WRAPPER, str(quarter_core), str(path), *settings]
    out = run_ok(command, timeout=400, env=env)
    if "threads: 2 intra-op (sized to the cores)" not in out:
        pytest.skip(f"the run did not start with 2 automatic threads: {out.splitlines()[1:3]}")
    assert out.count("intra-op threads lowered from 2 to 1 per rank for the next epochs") == 1, out[-3000:]
    records = [json.loads(line) for line in (tmp_path / "run" / "epochs.jsonl").read_text().splitlines()]
    assert [r["intra_op_threads"] for r in records] == [2, 1, 1]
    assert records[0]["cpu_share_min"] < 0.6
