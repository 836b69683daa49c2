"""Launch scripts (torchrun, flux, srun): parse, dry runs, and agreement with pecan.engine.distributed."""

from __future__ import annotations

import os
import shlex
import shutil
import signal
import subprocess
from pathlib import Path

import pytest

from pecan.engine.distributed import discover, expand_hostlist
from tests.engine.test_distributed import flux_rank_env

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = REPO / "scripts"
LAUNCH_SCRIPTS = ["launch_torchrun.sh", "launch_flux.sh", "launch_srun.sh"]


def test_common_launch_file_parses():
    """The shared opening every launch script sources."""
    subprocess.run(["bash", "-n", str(SCRIPTS / "launch_common.sh")], check=True)


@pytest.mark.parametrize("script", LAUNCH_SCRIPTS)
def test_launch_script_parses_and_is_executable(script):
    path = SCRIPTS / script
    assert os.access(path, os.X_OK), f"{script} is not executable"
    subprocess.run(["bash", "-n", str(path)], check=True)


@pytest.mark.skipif(shutil.which("shellcheck") is None, reason="shellcheck not installed")
@pytest.mark.parametrize("script", LAUNCH_SCRIPTS)
def test_launch_script_shellcheck(script):
    subprocess.run(["shellcheck", str(SCRIPTS / script)], check=True)


def _dry_run(
    script: str, tmp_path: Path, extra_env: dict[str, str] | None = None, path_prefix: Path | None = None
) -> str:
    """Run a launch script with PECAN_DRY_RUN=1 in a scrubbed environment and return its stdout."""
    config = tmp_path / "run.yaml"
    config.write_text("train:\n  epochs: 1\n")
    path = os.environ.get("PATH", "/usr/bin:/bin")
    env = {
        "PATH": f"{path_prefix}:{path}" if path_prefix else path,
        "HOME": str(tmp_path),
        "PECAN_DRY_RUN": "1",
        **(extra_env or {}),
    }
    result = subprocess.run(
        [str(SCRIPTS / script), str(config), "--set", "train.epochs=2"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_torchrun_dry_run_single_node(tmp_path):
    out = _dry_run("launch_torchrun.sh", tmp_path, {"NPROC_PER_NODE": "2"})
    command = next(line for line in out.splitlines() if line.startswith("[pecan] launch:"))
    assert "--standalone" in command.split()
    assert "-u" in command.split()
    assert "--nproc-per-node=2" in command and "PYTHONUNBUFFERED=1" in command
    assert command.rstrip().endswith("main_app.py " + str(tmp_path / "run.yaml") + " --set train.epochs=2")


def test_torchrun_dry_run_multi_node_uses_c10d(tmp_path):
    out = _dry_run("launch_torchrun.sh", tmp_path, {"NNODES": "2", "NPROC_PER_NODE": "4", "MASTER_ADDR": "n01"})
    assert "--rdzv-backend=c10d" in out and "--rdzv-endpoint=n01:29500" in out and "--standalone" not in out


def test_launch_rejects_missing_jemalloc(tmp_path):
    config = tmp_path / "run.yaml"
    config.write_text("{}\n")
    result = subprocess.run(
        [str(SCRIPTS / "launch_torchrun.sh"), str(config)],
        capture_output=True,
        text=True,
        env={"PATH": os.environ["PATH"], "PECAN_DRY_RUN": "1", "PECAN_JEMALLOC": str(tmp_path / "missing.so")},
    )
    assert result.returncode != 0 and "PECAN_JEMALLOC" in result.stderr


def test_jemalloc_is_preloaded(tmp_path):
    library = tmp_path / "libjemalloc.so"
    library.write_bytes(b"")
    out = _dry_run("launch_srun.sh", tmp_path, {"PECAN_JEMALLOC": str(library), "LD_PRELOAD": "/x.so"})
    assert f"LD_PRELOAD={library}:/x.so" in out


def test_srun_dry_run(tmp_path):
    out = _dry_run("launch_srun.sh", tmp_path, {"NODES": "4", "TASKS_PER_NODE": "4", "SLURM_CPUS_ON_NODE": "64"})
    assert "srun --nodes=4 --ntasks-per-node=4" in out
    assert "--gpus-per-task=1" in out and "--cpus-per-task=16" in out and " -u " in out


def _fake_flux(tmp_path: Path, size: int, hostlist: str, job_first_host: str = "unused") -> Path:
    """A `flux` on PATH that answers the queries launch_flux.sh and its tasks make."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    flux = bin_dir / "flux"
    flux.write_text(f"""#!/bin/sh
case "$1 $2" in
  "getattr size") echo {size} ;;
  "getattr hostlist") echo '{hostlist}' ;;
  "hostlist --help") exit 0 ;;
  "hostlist -n") [ "$3 $4" = "0 $FLUX_JOB_ID" ] && echo {job_first_host} ;;
  *) echo "unexpected flux $*" >&2; exit 1 ;;
esac
""")
    flux.chmod(0o755)
    return bin_dir


def _launch_argv(out: str) -> list[str]:
    """The command a launch script printed, split as bash would."""
    line = next(line for line in out.splitlines() if line.startswith("[pecan] launch: "))
    return shlex.split(line[len("[pecan] launch: ") :])


def test_flux_dry_run_resolves_the_first_node_once(tmp_path):
    bin_dir = _fake_flux(tmp_path, 4, "tioga[18,20-22]")
    out = _dry_run("launch_flux.sh", tmp_path, {"TASKS_PER_NODE": "4"}, path_prefix=bin_dir)
    command = _launch_argv(out)
    assert command[:5] == ["flux", "run", "-N4", "-n16", "-g1"]
    assert "PECAN_MASTER_ADDR=tioga18" in command and "PECAN_WORLD_SIZE=16" in command
    assert "-u" in command
    # Per-resource options would clash with -n/-g.
    assert not any(arg.startswith(("--tasks-per-node", "--cores-per-slot", "--gpus-per-node")) for arg in command)


def test_flux_on_part_of_the_instance_resolves_the_job_first_node_in_each_task(tmp_path):
    bin_dir = _fake_flux(tmp_path, 8, "tioga[18-25]", job_first_host="tioga21")
    show_env = tmp_path / "show_env"
    show_env.write_text("#!/bin/sh\nenv\n")
    show_env.chmod(0o755)
    out = _dry_run("launch_flux.sh", tmp_path, {"NODES": "2", "PYTHON": str(show_env)}, path_prefix=bin_dir)
    argv = _launch_argv(out)
    assert argv[:5] == ["flux", "run", "-N2", "-n8", "-g1"] and "PECAN_MASTER_ADDR=tioga18" not in argv
    # Run what each task would run, on two different nodes of the job.
    task_argv = argv[argv.index("-x") + 1 :]
    masters = set()
    for rank, host in [(0, "tioga21"), (7, "tioga22")]:
        task_env = {
            "PATH": f"{bin_dir}:{os.environ['PATH']}",
            "FLUX_JOB_ID": "f2Q8uRmGZ7",
            "FLUX_TASK_RANK": str(rank),
            "HOSTNAME": host,
        }
        printed = subprocess.run(task_argv, env=task_env, capture_output=True, text=True, check=True).stdout
        masters |= {line.split("=", 1)[1] for line in printed.splitlines() if line.startswith("PECAN_MASTER_ADDR=")}
    assert masters == {"tioga21"}


def test_flux_master_from_script_matches_discover(tmp_path):
    bin_dir = _fake_flux(tmp_path, 2, "gpu[007-008]")
    out = _dry_run("launch_flux.sh", tmp_path, {"TASKS_PER_NODE": "2"}, path_prefix=bin_dir)
    exported = dict(arg.split("=", 1) for arg in out.split() if arg.startswith("PECAN_"))
    envs = [discover({**flux_rank_env(rank, ["gpu007", "gpu008"], 2), **exported}) for rank in range(4)]
    assert {env.master_addr for env in envs} == {expand_hostlist("gpu[007-008]")[0]}


# ---------------------------------------------------------------------------- time limits (docs/time-limits.md)


def test_torchrun_ignores_the_stop_signal_its_ranks_handle(tmp_path):
    fake_python = tmp_path / "python"
    fake_python.write_text("#!/bin/sh\ngrep '^SigIgn' /proc/self/status\n")
    fake_python.chmod(0o755)
    config = tmp_path / "run.yaml"
    config.write_text("train:\n  epochs: 1\n")
    for stop_signal, number in (("", signal.SIGUSR1), ("SIGUSR2@90", signal.SIGUSR2)):
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(tmp_path),
            "PYTHON": str(fake_python),
            "NPROC_PER_NODE": "1",
            **({"STOP_SIGNAL": stop_signal} if stop_signal else {}),
        }
        done = subprocess.run(
            [str(SCRIPTS / "launch_torchrun.sh"), str(config)], env=env, capture_output=True, text=True, timeout=60
        )
        assert done.returncode == 0, done.stderr
        mask = int(done.stdout.split("SigIgn:")[1].split()[0], 16)
        assert mask & (1 << (number - 1)), (stop_signal, hex(mask))


def test_flux_time_limit_sends_the_stop_signal_before_it(tmp_path):
    bin_dir = _fake_flux(tmp_path, 2, "gpu[007-008]")
    out = _dry_run("launch_flux.sh", tmp_path, {"TIME_LIMIT": "4h", "STOP_SIGNAL": "USR1@2m"}, path_prefix=bin_dir)
    argv = _launch_argv(out)
    assert argv[argv.index("-t") + 1] == "4h" and "--signal=USR1@2m" in argv
    assert argv.index("--signal=USR1@2m") < argv.index("-x")  # a flux option, before the task command


def test_time_limits_doc_launch_lines_dry_run(tmp_path):
    text = (REPO / "docs" / "time-limits.md").read_text()
    lines = [
        line.strip()
        for line in text.splitlines()
        if "scripts/launch_" in line and ".sh configs/" in line and not line.lstrip().startswith(("#", "-", "`"))
    ]
    assert len(lines) >= 2, lines
    config = tmp_path / "my_run.yaml"
    config.write_text("train:\n  epochs: 1\n")
    for line in lines:
        words = shlex.split(line.replace("|| break", ""))
        assigns = dict(w.split("=", 1) for w in words if "=" in w and w.split("=", 1)[0].isupper())
        script_at = next(i for i, w in enumerate(words) if w.startswith("scripts/launch_"))
        argv = [str(REPO / words[script_at]), str(config), *words[script_at + 2 :]]
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp_path), "PECAN_DRY_RUN": "1", **assigns}
        done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60)
        assert done.returncode == 0, (line, done.stderr)
        command = _launch_argv(done.stdout)
        if "TIME_LIMIT" in assigns:
            assert f"--signal={assigns['STOP_SIGNAL']}" in command and assigns["TIME_LIMIT"] in command
