"""The out_dir lock on clusters: owner identity, stale rules (gone, requeued, heartbeat), race-free takeover
by real concurrent processes, the heartbeat, --force-unlock, the lock never reaching sync_dir, and damaged
or future-dated lock files."""

import json
import logging
import os
import platform
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from pecan.runtime import dir_lock
from pecan.runtime.errors import OutDirInUse
from pecan.train import run_dir
from pecan.train.run_dir import LOCK_NAME, RunLock
from pecan.train.sync import sync_tree
from tests.app_run import run

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def _no_job(monkeypatch):
    for name in run_dir.JOB_ID_VARS:
        monkeypatch.delenv(name, raising=False)


def write_lock(directory: Path, age_s: float = 0.0, **fields) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    record = {"host": "node0042", "pid": 4242, "job_id": "", "started": "then", "token": "old", **fields}
    lock = directory / LOCK_NAME
    lock.write_text(json.dumps(record))
    stamp = time.time() - age_s
    os.utime(lock, (stamp, stamp))
    return lock


def dead_pid() -> int:
    process = subprocess.Popen(["true"])
    process.wait()
    return process.pid


def owner(directory: Path) -> dict:
    return json.loads((directory / LOCK_NAME).read_text())


def test_live_lock_of_another_host_is_refused_naming_it(tmp_path):
    write_lock(tmp_path, job_id="111")
    with pytest.raises(OutDirInUse, match=r"host node0042, pid 4242, job 111.*--force-unlock"):
        RunLock(tmp_path).acquire(heartbeat=False)
    assert owner(tmp_path)["token"] == "old"


def test_requeued_job_takes_over_its_own_lock_from_another_host(tmp_path, monkeypatch):
    write_lock(tmp_path, job_id="777")
    monkeypatch.setenv("SLURM_JOB_ID", "777")
    lock = RunLock(tmp_path).acquire(heartbeat=False)
    assert owner(tmp_path)["token"] == lock.mine["token"] and owner(tmp_path)["job_id"] == "777"
    lock.release()
    assert not (tmp_path / LOCK_NAME).exists()


def test_flux_job_id_identifies_the_owner_too(tmp_path, monkeypatch):
    write_lock(tmp_path, job_id="f2Bq")
    monkeypatch.setenv("FLUX_JOB_ID", "f2Bq")
    RunLock(tmp_path).acquire(heartbeat=False).release()


def test_expired_heartbeat_is_taken_over_whatever_the_host(tmp_path):
    write_lock(tmp_path, age_s=11 * 60)
    RunLock(tmp_path, stale_after_s=10 * 60).acquire(heartbeat=False).release()
    write_lock(tmp_path, age_s=9 * 60)
    with pytest.raises(OutDirInUse, match="heartbeat 540 s ago"):
        RunLock(tmp_path, stale_after_s=10 * 60).acquire(heartbeat=False)


def test_same_host_owner_gone_or_pid_reused_is_taken_over_live_one_is_not(tmp_path):
    write_lock(tmp_path, host=platform.node(), pid=dead_pid())
    RunLock(tmp_path).acquire(heartbeat=False).release()
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        start = run_dir.process_start(sleeper.pid)
        write_lock(tmp_path, host=platform.node(), pid=sleeper.pid, pid_start=start)
        with pytest.raises(OutDirInUse, match=f"pid {sleeper.pid}"):
            RunLock(tmp_path).acquire(heartbeat=False)
        write_lock(tmp_path, host=platform.node(), pid=sleeper.pid, pid_start=start - 1)  # an older process
        RunLock(tmp_path).acquire(heartbeat=False).release()
    finally:
        sleeper.kill()
        sleeper.wait()


def test_force_unlock_takes_a_live_lock(tmp_path):
    write_lock(tmp_path, job_id="111")
    lock = RunLock(tmp_path, force=True).acquire(heartbeat=False)
    assert owner(tmp_path)["token"] == lock.mine["token"]
    lock.release()


def test_heartbeat_refreshes_the_mtime_and_release_keeps_a_foreign_lock(tmp_path, monkeypatch):
    monkeypatch.setattr(dir_lock, "HEARTBEAT_S", 0.1)
    lock = RunLock(tmp_path).acquire()
    path = tmp_path / LOCK_NAME
    os.utime(path, (time.time() - 3600, time.time() - 3600))
    time.sleep(0.5)
    assert time.time() - path.stat().st_mtime < 5
    path.write_text(json.dumps({"token": "someone else"}))
    lock.release()
    assert path.exists()  # not ours any more: left alone


def test_lock_is_never_copied_to_sync_dir(tmp_path):
    source = tmp_path / "out"
    RunLock(source).acquire(heartbeat=False)
    (source / "epochs.jsonl").write_text("{}\n")
    sync_tree(source, tmp_path / "shared")
    assert (tmp_path / "shared" / "epochs.jsonl").exists()
    assert not list((tmp_path / "shared").glob(".pecan.lock*"))


RACER = textwrap.dedent("""
    import sys, time
    from pecan.runtime.errors import OutDirInUse
    from pecan.train.run_dir import RunLock
    out_dir, go = sys.argv[1], float(sys.argv[2])
    lock = RunLock(out_dir, stale_after_s=600)
    while time.time() < go:
        pass
    try:
        lock.acquire(heartbeat=False)
    except OutDirInUse:
        print("REFUSED", flush=True)
    else:
        print("OWNER", lock.mine["token"], flush=True)
        time.sleep(0.5)  # hold it while the other one looks
""")


@pytest.mark.slow
@pytest.mark.parametrize("stale", ["dead_pid", "old_heartbeat"])
def test_two_processes_taking_over_a_stale_lock_never_both_own_it(tmp_path, stale):
    environ = {**os.environ, "PYTHONPATH": str(ROOT)}
    for name in run_dir.JOB_ID_VARS:
        environ.pop(name, None)
    # 20 trials, 5 at a time: each trial is a pair of racers over its own directory, started together.
    for batch in range(4):
        trials = range(batch * 5, batch * 5 + 5)
        for trial in trials:
            if stale == "dead_pid":
                write_lock(tmp_path / f"trial{trial}", host=platform.node(), pid=dead_pid())
            else:
                write_lock(tmp_path / f"trial{trial}", age_s=3600)
        go = time.time() + 1.0  # every racer is imported and spinning by then
        racers = {
            trial: [
                subprocess.Popen(
                    [sys.executable, "-c", RACER, str(tmp_path / f"trial{trial}"), str(go)],
                    env=environ,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                )
                for _ in range(2)
            ]
            for trial in trials
        }
        for trial, pair in racers.items():
            outputs = [r.communicate(timeout=60) for r in pair]
            owners = [out for out, _ in outputs if out.startswith("OWNER")]
            assert len(owners) == 1, (trial, outputs)
            assert owner(tmp_path / f"trial{trial}")["token"] == owners[0].split()[1]


def test_a_takeover_decided_on_an_old_reading_never_removes_the_new_owner(tmp_path):
    # The interleaving that gave two owners: A reads the stale lock, B takes it over and owns it, then A acts.
    write_lock(tmp_path, host=platform.node(), pid=dead_pid())
    stale_reading = owner(tmp_path)
    b = RunLock(tmp_path).acquire(heartbeat=False)
    a = RunLock(tmp_path)
    a._take_over(stale_reading, "its process is gone")
    assert owner(tmp_path)["token"] == b.mine["token"]
    with pytest.raises(OutDirInUse):
        a.acquire(heartbeat=False)  # B is alive on this host: refused
    b.release()


def test_a_takeover_in_progress_elsewhere_is_left_alone(tmp_path):
    write_lock(tmp_path, host=platform.node(), pid=dead_pid())
    (tmp_path / run_dir.TAKEOVER_NAME).mkdir()
    RunLock(tmp_path)._take_over(owner(tmp_path), "its process is gone")
    assert owner(tmp_path)["token"] == "old"


@pytest.mark.parametrize(
    "content",
    [
        b'{"host": "%HOST%", "pid": "abc", "token": "t"}',
        b"\xff\xfe\x00binary\x81",
        b"null",
        b"[1, 2]",
        b'{"host": "%HOST%", "pid": null}',
        b'{"host": "%HOST%", "pid": 1e400}',
    ],
)
def test_unreadable_lock_is_taken_over_with_a_clear_message(tmp_path, caplog, content):
    import platform

    from pecan.train.run_dir import LOCK_NAME, RunLock

    (tmp_path / LOCK_NAME).write_bytes(content.replace(b"%HOST%", platform.node().encode()))
    caplog.set_level(logging.WARNING)
    lock = RunLock(tmp_path).acquire(heartbeat=False)
    try:
        assert lock.owned()
        assert "taking over the lock" in caplog.text and LOCK_NAME in caplog.text
        assert "unreadable" in caplog.text
    finally:
        lock.release()


def test_lock_heartbeat_far_in_the_future_does_not_block_until_that_date(tmp_path, caplog):
    import os
    import time

    from pecan.train.run_dir import LOCK_NAME, RunLock

    path = tmp_path / LOCK_NAME
    path.write_text(json.dumps({"host": "elsewhere", "pid": 1, "job_id": "", "token": "old"}))
    later = time.time() + 365 * 86400
    os.utime(path, (later, later))
    caplog.set_level(logging.WARNING)
    lock = RunLock(tmp_path, stale_after_s=600).acquire(heartbeat=False)
    try:
        assert lock.owned() and "in the future" in caplog.text
    finally:
        lock.release()


def test_second_run_on_out_dir_exits_2_naming_holder(tmp_path, data_dir, caplog, capsys):
    holder = subprocess.Popen(["sleep", "60"])
    try:
        lock = tmp_path / "run" / ".pecan.lock"
        lock.parent.mkdir(parents=True)
        lock.write_text(f'{{"host": "{platform.node()}", "pid": {holder.pid}, "started": "now"}}')
        code, text = run(tmp_path, data_dir, caplog=caplog, capsys=capsys)
    finally:
        holder.kill()
        holder.wait()
    assert code == 2 and f"pid {holder.pid}" in text and platform.node() in text
    assert not (tmp_path / "run" / "epochs.jsonl").exists()


@pytest.mark.slow
def test_stale_lock_and_temp_files_are_cleaned(tmp_path, data_dir, caplog, capsys):
    dead = subprocess.Popen(["true"])
    dead.wait()
    run_dir = tmp_path / "run"
    (run_dir / "checkpoints").mkdir(parents=True)
    (run_dir / ".pecan.lock").write_text(f'{{"host": "{platform.node()}", "pid": {dead.pid}}}')
    stale = [run_dir / ".epochs.jsonl.abc123.tmp", run_dir / "checkpoints" / ".last.pt.xyz.tmp"]
    for path in stale:
        path.write_text("partial")
    code, text = run(tmp_path, data_dir, "train.max_steps_per_epoch=1", caplog=caplog, capsys=capsys)
    assert code == 0, text
    assert not any(path.exists() for path in stale) and "taking over the lock of a dead run" in text
    assert not (run_dir / ".pecan.lock").exists()  # released at the end
