"""Who owns `pecan convert`'s --out: a live conversion locks it (a second job exits 2 naming the holder), a
folder of another plan is refused unless --replace (which removes every earlier shard), ranks given
different options exit 2 naming the option and both values, a stale lock is taken over."""

import json
import os
import shlex
import signal
import subprocess
import sys

import pandas as pd
import pytest

pytest.importorskip("rdkit", reason="needs the convert extra: pip install -e '.[convert]'")
pytest.importorskip("prolif", reason="needs the convert extra: pip install -e '.[convert]'")

from pecan import cli  # noqa: E402
from pecan.commands.shares import rerun_command  # noqa: E402
from pecan.convert.complexes import Options  # noqa: E402
from pecan.convert.run import convert  # noqa: E402
from pecan.runtime.errors import ConfigError, OutDirInUse  # noqa: E402
from pecan.runtime.out_folder import PLAN_NAME  # noqa: E402
from pecan.runtime.shares import Place  # noqa: E402
from tests.convert import structures as st  # noqa: E402
from tests.ddp import free_port, rank_env, run_ranks_ok  # noqa: E402
from tests.procs import clean_env, running, signal_when, torchrun, wait_for  # noqa: E402


def _manifest(folder, name, ids):
    folder.mkdir(parents=True, exist_ok=True)
    crystal = st.ligand("NCC(O)CCS", seed=3)
    st.write_receptor(folder / "rec.pdb", crystal.GetConformer().GetPositions())
    st.write_sdf(folder / "xtal.sdf", [crystal])
    st.write_sdf(folder / "lig.sdf", [crystal, st.moved(crystal, translation=(0, 3.0, 0))])
    rows = [{"complex_id": c, "receptor": "rec.pdb", "poses": "lig.sdf", "crystal_ligand": "xtal.sdf"} for c in ids]
    return st.manifest(folder / name, rows)


def _command(manifest, out, *extra):
    command = [sys.executable, "-m", "pecan", "convert", str(manifest), "--out", str(out)]
    return command + ["--complexes-per-shard", "1", "--progress", "off", *extra]


def _run(command, env=None):
    done = subprocess.run(command, env=env or clean_env(), capture_output=True, text=True, timeout=300)
    return done.returncode, done.stdout + done.stderr


@pytest.mark.slow
@pytest.mark.multiprocess
def test_a_second_job_into_a_used_out_is_refused_until_replace(tmp_path):
    first = _manifest(tmp_path / "a", "manifest.csv", [f"a{k}" for k in range(6)])
    second = _manifest(tmp_path / "b", "manifest.csv", ["b0", "b1"])
    out = tmp_path / "out"
    with running(_command(first, out), env=clean_env(), merged=True) as job:
        wait_for(job, lambda: (out / ".pecan.lock").exists())
        os.killpg(job.pid, signal.SIGSTOP)  # the first job is alive but cannot finish meanwhile
        try:
            code, output = _run(_command(second, out))
        finally:
            os.killpg(job.pid, signal.SIGCONT)
        assert code == 2 and "--out" in output and "is in use by another run" in output, output
        assert f"pid {job.pid}" in output
        assert job.wait(timeout=300) == 0
    index = pd.read_csv(out / "converted_all.csv")
    assert sorted(index["pdbid"].unique()) == [f"a{k}" for k in range(6)]  # none of the second job's

    code, output = _run(_command(second, out))  # the first job is done: its shards are another plan's
    assert code == 2 and "holds the outputs of another plan" in output and "the manifest" in output, output
    assert str(first.resolve()) in output and str(second.resolve()) in output and "--replace" in output
    assert len(list(out.glob("converted_*.hdf5"))) == 6

    code, output = _run(_command(second, out, "--replace"))
    assert code == 0, output
    assert sorted(p.name for p in out.glob("converted_*.hdf5")) == ["converted_0000.hdf5", "converted_0001.hdf5"]
    assert sorted(pd.read_csv(out / "converted_all.csv")["pdbid"].unique()) == ["b0", "b1"]
    assert not list(out.glob(".converted_000[2-5].done.json")) and not (out / ".pecan.lock").exists()


@pytest.mark.slow
@pytest.mark.multiprocess
def test_ranks_given_different_options_exit_2_naming_the_option(tmp_path):
    manifest = _manifest(tmp_path, "manifest.csv", ["c0", "c1", "c2"])
    out = tmp_path / "out"
    port = free_port()
    ranks = []
    for rank, radius in ((0, "8"), (1, "6")):
        # torchrun gives every rank of one launch the same run id
        env = rank_env(rank, 2, port, {**clean_env(), "TORCHELASTIC_RUN_ID": "launch-1"})
        command = _command(manifest, out, "--pocket-radius", radius)
        ranks.append(subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    outputs = [process.communicate(timeout=300)[0] for process in ranks]
    codes = [process.returncode for process in ranks]
    assert sorted(codes) == [0, 2], outputs
    refused = outputs[codes.index(2)]
    assert "the ranks of this run disagree" in refused and "--pocket-radius" in refused, refused
    assert ("8.0 there, 6.0 here" in refused) or ("6.0 there, 8.0 here" in refused), refused
    assert not (out / "converted_all.csv").exists()  # the disagreeing rank's share is never converted


def test_a_rerun_of_the_same_plan_resumes_and_another_plan_names_every_differing_option(tmp_path):
    manifest = _manifest(tmp_path, "manifest.csv", ["c0", "c1"])
    out = tmp_path / "out"
    convert(manifest, out, Options(), per_shard=1, progress=False)
    stamp = (out / "converted_0000.hdf5").stat().st_mtime_ns
    assert convert(manifest, out, Options(), per_shard=1, progress=False)["reused_shards"] == 2
    assert (out / "converted_0000.hdf5").stat().st_mtime_ns == stamp
    with pytest.raises(ConfigError) as refused:
        convert(manifest, out, Options(pocket_radius=6.0, drop_hetero=True), per_shard=2, progress=False)
    message = str(refused.value)
    for named in ("--pocket-radius 8.0 there, 6.0 here", "--drop-hetero False there, True here"):
        assert named in message
    assert "--complexes-per-shard 1 there, 2 here" in message
    assert json.loads((out / PLAN_NAME).read_text())["options"]["--pocket-radius"] == "8.0"  # unchanged


def test_a_live_lock_refuses_and_a_dead_ones_is_taken_over(tmp_path, caplog):
    manifest = _manifest(tmp_path, "manifest.csv", ["c0"])
    out = tmp_path / "out"
    out.mkdir()
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        lock = {"host": os.uname().nodename, "pid": sleeper.pid, "job_id": "", "token": "x"}
        (out / ".pecan.lock").write_text(json.dumps(lock))
        with pytest.raises(OutDirInUse, match=rf"--out {out} is in use by another run .*pid {sleeper.pid}"):
            convert(manifest, out, Options(), progress=False)
        assert not list(out.glob("*.hdf5"))
    finally:
        sleeper.kill()
        sleeper.wait()
    summary = convert(manifest, out, Options(), progress=False)  # its owner is gone now: the lock is stale
    assert summary["complexes"] == 1 and "taking over the lock of a dead run" in caplog.text
    assert not (out / ".pecan.lock").exists()


@pytest.mark.slow
def test_a_full_disk_is_exit_1_naming_the_shard_and_leaves_no_partial_shard(tmp_path, mounts):
    folder = tmp_path / "inputs"
    manifest = _manifest(folder, "manifest.csv", [f"c{k}" for k in range(8)])
    crystal = st.ligand("NCC(O)CCS", seed=3)
    # 20 poses a complex: one 4-complex shard is larger than the 64 KiB file system (HDF5 used to crash: rc 139)
    st.write_sdf(folder / "lig.sdf", [crystal, st.moved(crystal, translation=(0, 3.0, 0))] * 10)
    out = mounts.tmpfs(tmp_path / "full", size="64k") / "out"
    code, output = _run(_command(manifest, out, "--complexes-per-shard", "4"))
    assert code == 1, output[-3000:]
    assert f"{out / 'converted_0000.hdf5'}: disk full (ENOSPC)" in output
    assert "Traceback" not in output and "h5py" not in output
    assert sorted(p.name for p in out.iterdir()) == [PLAN_NAME]  # no shard, no temp file, the lock released


@pytest.mark.slow
@pytest.mark.multiprocess
def test_a_stopped_rank_under_torchrun_prints_the_torchrun_command_to_resume(tmp_path):
    manifest = _manifest(tmp_path, "manifest.csv", [f"c{k}" for k in range(40)])
    out = tmp_path / "out"
    pecan = ["-m", "pecan", "convert", str(manifest), "--out", str(out), "--complexes-per-shard", "1"]
    command = torchrun("--standalone", "--nproc-per-node", "2", *pecan, "--progress", "off")
    with running(command, env=clean_env()) as agent:
        _, stderr, _ = signal_when(agent, lambda: list(out.glob(".*.done.json")), signal.SIGINT, to_group=True)
    hints = [line for line in stderr.splitlines() if "resume with the same command: " in line]
    assert hints, stderr[-3000:]
    for hint in hints:  # each rank names the launcher line it was started by, not `python -m pecan convert`
        assert hint.split("resume with the same command: ", 1)[1] == shlex.join(command), hint


def test_the_resume_hint_repeats_srun_and_flux_with_their_rank_count():
    words = ["pecan", "convert", "m.csv", "--out", "my out"]
    assert rerun_command(words, Place(1, 4, "slurm")) == "srun -n 4 pecan convert m.csv --out 'my out'"
    assert rerun_command(words, Place(0, 2, "flux")) == "flux run -n 2 pecan convert m.csv --out 'my out'"
    assert rerun_command(words, Place()) == "pecan convert m.csv --out 'my out'"
    agent = ["/usr/bin/python3", "/venv/bin/torchrun", "--nproc-per-node", "2", "-m", "pecan", "convert", "m.csv"]
    assert rerun_command(words, Place(1, 2, "torchrun"), launcher_line=agent) == shlex.join(agent)
    started_by_hand = rerun_command(words, Place(1, 2, "torchrun"), launcher_line=["bash"])
    assert started_by_hand.endswith("(on each of the 2 ranks, as torchrun started them)")


@pytest.mark.slow
@pytest.mark.multiprocess
def test_progress_lines_under_two_ranks_carry_the_rank(tmp_path):
    manifest = _manifest(tmp_path, "manifest.csv", ["c0", "c1", "c2", "c3"])
    command = [sys.executable, "-m", "pecan", "convert", str(manifest), "--out", str(tmp_path / "out")]
    output = run_ranks_ok(command + ["--complexes-per-shard", "1", "--progress", "lines"], nprocs=2)
    lines = [line for line in output.splitlines() if " complex" in line and "| " in line]
    assert lines, output[-3000:]
    assert {line.split(":")[0].strip() for line in lines} == {"converting (rank 0 of 2)", "converting (rank 1 of 2)"}


@pytest.mark.parametrize("bad", ["ab/cd", "..", "x\\y"])
def test_a_complex_id_that_cannot_name_a_group_is_refused_up_front_naming_its_line(tmp_path, capsys, bad):
    manifest = _manifest(tmp_path, "manifest.csv", ["c0", bad, "c2"])
    out = tmp_path / "out"
    assert cli.main(_command(manifest, out)[3:]) == 2
    err = capsys.readouterr().err
    assert f"manifest {manifest}, line 3: complex_id {bad!r} cannot name a file or a shard group" in err, err
    assert not out.exists() or not list(out.glob("*.hdf5"))


@pytest.mark.slow
@pytest.mark.multiprocess
def test_a_ranks_failures_are_in_failures_csv_before_the_last_rank_finishes(tmp_path):
    manifest = _manifest(tmp_path, "manifest.csv", ["c0", "c1"])
    rows = pd.read_csv(manifest, dtype=str)
    gone = {"complex_id": "gone", "receptor": "nope.pdb", "poses": "nope.sdf", "crystal_ligand": ""}
    pd.concat([pd.DataFrame([gone]), rows]).to_csv(manifest, index=False)  # shard 0 (rank 0's): the missing one
    out, port = tmp_path / "out", free_port()
    code, output = _run(_command(manifest, out), env=rank_env(0, 2, port))
    assert code == 0 and not (out / "converted_all.csv").exists(), output
    failures = pd.read_csv(out / "failures.csv", keep_default_na=False)
    assert list(failures["complex_id"]) == ["gone"]  # rank 1 has not started yet
    code, output = _run(_command(manifest, out), env=rank_env(1, 2, port))
    assert code == 0 and "converted 2 complexes" in output, output
    assert list(pd.read_csv(out / "failures.csv", keep_default_na=False)["complex_id"]) == ["gone"]
