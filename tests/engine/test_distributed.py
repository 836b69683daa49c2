"""Tests for pecan.engine.distributed: launcher discovery, host lists, CPU sizing, launch scripts."""

from __future__ import annotations

import os
import socket
import time
from pathlib import Path

import pytest
import torch

from pecan.engine import distributed
from pecan.engine.distributed import (
    DistEnv,
    barrier,
    cleanup_distributed,
    default_backend,
    discover,
    expand_hostlist,
    init_distributed,
    loader_workers_per_rank,
    physical_cores,
)

REPO = Path(__file__).resolve().parents[2]
SCRIPTS = REPO / "scripts"
LAUNCH_SCRIPTS = ["launch_torchrun.sh", "launch_flux.sh", "launch_srun.sh"]


@pytest.fixture
def restore_environ():
    """init_distributed exports MASTER_ADDR and friends; keep them out of other tests."""
    saved = dict(os.environ)
    yield
    os.environ.clear()
    os.environ.update(saved)


# ---------------------------------------------------------------------------------------------
# Host lists
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "hostlist, expected",
    [
        ("node[01-04,07]", ["node01", "node02", "node03", "node04", "node07"]),
        ("a1,b[2-3]", ["a1", "b2", "b3"]),
        ("gpu3", ["gpu3"]),
        ("n[008-011]", ["n008", "n009", "n010", "n011"]),
        ("node[01-02,07],gpu3", ["node01", "node02", "node07", "gpu3"]),
        ("rack[1-2]n[01-02]", ["rack1n01", "rack1n02", "rack2n01", "rack2n02"]),
        ("tioga[18,20-21]-ib", ["tioga18-ib", "tioga20-ib", "tioga21-ib"]),
        ("n[9-11]", ["n9", "n10", "n11"]),
        ("", []),
    ],
)
def test_expand_hostlist(hostlist, expected):
    assert expand_hostlist(hostlist) == expected


@pytest.mark.parametrize("bad", ["node[01-", "node01]", "node[a-b]", "node[4-2]", "n[[1]]"])
def test_expand_hostlist_rejects_malformed(bad):
    with pytest.raises(ValueError, match="host list"):
        expand_hostlist(bad)


# ---------------------------------------------------------------------------------------------
# Discovery per launcher
# ---------------------------------------------------------------------------------------------


def test_no_launcher_is_single_process():
    env = discover({})
    assert env == DistEnv(0, 0, 1, 1, "127.0.0.1", 29500, "single")
    assert not env.is_distributed and env.is_main


def test_torchrun_env():
    env = discover(
        {
            "RANK": "5",
            "LOCAL_RANK": "1",
            "WORLD_SIZE": "8",
            "LOCAL_WORLD_SIZE": "4",
            "MASTER_ADDR": "node01",
            "MASTER_PORT": "29400",
        }
    )
    assert (env.rank, env.local_rank, env.world_size, env.local_world_size) == (5, 1, 8, 4)
    assert (env.master_addr, env.master_port, env.launcher) == ("node01", 29400, "torchrun")
    assert env.is_distributed and not env.is_main


def test_torchrun_wins_over_slurm_when_both_are_set():
    # torchrun started inside an srun step: torchrun's own ranks are the ones that matter.
    env = discover(
        {
            "RANK": "1",
            "LOCAL_RANK": "1",
            "WORLD_SIZE": "2",
            "MASTER_ADDR": "127.0.0.1",
            "SLURM_PROCID": "0",
            "SLURM_LOCALID": "0",
            "SLURM_NTASKS": "1",
        }
    )
    assert env.launcher == "torchrun" and env.rank == 1


def test_pecan_overrides_apply_to_torchrun():
    env = discover(
        {
            "RANK": "0",
            "LOCAL_RANK": "0",
            "WORLD_SIZE": "2",
            "MASTER_ADDR": "a",
            "MASTER_PORT": "1",
            "PECAN_MASTER_ADDR": "b",
            "PECAN_MASTER_PORT": "2345",
        }
    )
    assert (env.master_addr, env.master_port) == ("b", 2345)


def slurm_rank_env(rank: int, nodes: list[str], tasks_per_node: int, job_id: int = 123456) -> dict[str, str]:
    """What srun gives task `rank` of a nodes x tasks_per_node step, including this node's own names."""
    node = rank // tasks_per_node
    return {
        "SLURM_JOB_ID": str(job_id),
        "SLURM_PROCID": str(rank),
        "SLURM_LOCALID": str(rank % tasks_per_node),
        "SLURM_NODEID": str(node),
        "SLURM_NTASKS": str(len(nodes) * tasks_per_node),
        "SLURM_NTASKS_PER_NODE": str(tasks_per_node),
        "SLURM_TASKS_PER_NODE": f"{tasks_per_node}(x{len(nodes)})",
        "SLURM_JOB_NODELIST": f"node[01-{len(nodes):02d}]",
        "SLURM_NODELIST": f"node[01-{len(nodes):02d}]",
        "SLURMD_NODENAME": nodes[node],
        "HOSTNAME": nodes[node],
    }


def test_slurm_env():
    nodes = ["node01", "node02", "node03", "node04"]
    env = discover(slurm_rank_env(6, nodes, 4))
    assert (env.rank, env.local_rank, env.world_size, env.local_world_size) == (6, 2, 16, 4)
    assert env.launcher == "slurm"
    assert env.master_port == 20000 + 123456 % 20000


def test_every_slurm_rank_computes_the_same_master():
    nodes = ["node01", "node02", "node03", "node04"]
    envs = [discover(slurm_rank_env(rank, nodes, 4)) for rank in range(16)]
    assert [env.rank for env in envs] == list(range(16))
    assert {env.master_addr for env in envs} == {"node01"}
    assert len({env.master_port for env in envs}) == 1
    assert {env.world_size for env in envs} == {16}


def test_slurm_step_on_part_of_the_allocation_uses_the_step_nodes():
    environ = slurm_rank_env(0, ["node01", "node02", "node03", "node04"], 4)
    environ.update(
        {"SLURM_STEP_NODELIST": "node[03-04]", "SLURM_STEP_NUM_TASKS": "8", "SLURM_STEP_TASKS_PER_NODE": "4(x2)"}
    )
    env = discover(environ)
    assert (env.master_addr, env.world_size, env.local_world_size) == ("node03", 8, 4)


def test_slurm_uneven_tasks_per_node_uses_this_node_entry():
    env = discover(
        {
            "SLURM_PROCID": "8",
            "SLURM_LOCALID": "0",
            "SLURM_NODEID": "2",
            "SLURM_NTASKS": "11",
            "SLURM_TASKS_PER_NODE": "4(x2),3",
            "SLURM_JOB_NODELIST": "c[1-3]",
        }
    )
    assert (env.local_world_size, env.master_addr) == (3, "c1")


def test_slurm_master_override():
    environ = slurm_rank_env(3, ["node01", "node02"], 2)
    environ["PECAN_MASTER_ADDR"] = "node01-ib"
    assert discover(environ).master_addr == "node01-ib"


def flux_rank_env(rank: int, nodes: list[str], tasks_per_node: int) -> dict[str, str]:
    """What `flux run` gives task `rank`: no node list, and a broker URI local to each node."""
    node = rank // tasks_per_node
    return {
        "FLUX_JOB_ID": "f2Q8uRmGZ7",
        "FLUX_TASK_RANK": str(rank),
        "FLUX_TASK_LOCAL_ID": str(rank % tasks_per_node),
        "FLUX_JOB_SIZE": str(len(nodes) * tasks_per_node),
        "FLUX_JOB_NNODES": str(len(nodes)),
        "FLUX_URI": f"local:///var/tmp/flux-{node}/local-{node}",
        "HOSTNAME": nodes[node],
    }


def test_flux_env():
    env = discover({**flux_rank_env(5, ["t18", "t20"], 4), "PECAN_MASTER_ADDR": "t18"})
    assert (env.rank, env.local_rank, env.world_size, env.local_world_size) == (5, 1, 8, 4)
    assert (env.launcher, env.master_port) == ("flux", 29500)


def test_every_flux_rank_computes_the_same_master():
    nodes = ["tioga18", "tioga20", "tioga21", "tioga22"]
    script_exports = {
        "PECAN_MASTER_ADDR": "tioga18",
        "PECAN_WORLD_SIZE": "16",
        "PECAN_LOCAL_WORLD_SIZE": "4",
        "PECAN_MASTER_PORT": "29511",
    }
    envs = [discover({**flux_rank_env(rank, nodes, 4), **script_exports}) for rank in range(16)]
    assert [env.rank for env in envs] == list(range(16))
    assert {env.master_addr for env in envs} == {"tioga18"}
    assert {env.master_port for env in envs} == {29511}
    assert {env.local_world_size for env in envs} == {4}


def test_flux_without_a_master_refuses_to_guess():
    with pytest.raises(ValueError, match="PECAN_MASTER_ADDR"):
        discover(flux_rank_env(1, ["t18", "t20"], 1))


def test_flux_world_size_from_launch_script_only():
    environ = flux_rank_env(0, ["t18"], 2)
    del environ["FLUX_JOB_SIZE"]
    environ.update({"PECAN_WORLD_SIZE": "2", "PECAN_MASTER_ADDR": "t18"})
    assert discover(environ).world_size == 2


def test_flux_stale_world_size_is_an_error():
    environ = {**flux_rank_env(0, ["t18"], 2), "PECAN_WORLD_SIZE": "4", "PECAN_MASTER_ADDR": "t18"}
    with pytest.raises(ValueError, match="PECAN_WORLD_SIZE"):
        discover(environ)


@pytest.mark.parametrize(
    "environ, variable",
    [
        ({"RANK": "0"}, "WORLD_SIZE"),
        ({"RANK": "0", "WORLD_SIZE": "2"}, "LOCAL_RANK"),
        ({"RANK": "one", "WORLD_SIZE": "2", "LOCAL_RANK": "0"}, "RANK"),
        ({"RANK": "0", "WORLD_SIZE": "2", "LOCAL_RANK": "0", "MASTER_PORT": "http"}, "MASTER_PORT"),
        (
            {"SLURM_PROCID": "abc", "SLURM_LOCALID": "0", "SLURM_NTASKS": "2", "SLURM_JOB_NODELIST": "n1"},
            "SLURM_PROCID",
        ),
        ({"SLURM_PROCID": "0", "SLURM_NTASKS": "2", "SLURM_JOB_NODELIST": "n1"}, "SLURM_LOCALID"),
        ({"SLURM_PROCID": "0", "SLURM_LOCALID": "0", "SLURM_NTASKS": "2"}, "SLURM_JOB_NODELIST"),
        (
            {
                "SLURM_PROCID": "0",
                "SLURM_LOCALID": "0",
                "SLURM_NTASKS": "2",
                "SLURM_JOB_NODELIST": "n1",
                "SLURM_TASKS_PER_NODE": "two",
            },
            "SLURM_TASKS_PER_NODE",
        ),
        ({"FLUX_TASK_RANK": "0", "FLUX_TASK_LOCAL_ID": "0"}, "FLUX_JOB_SIZE"),
        ({"FLUX_TASK_RANK": "0", "FLUX_JOB_SIZE": "1"}, "FLUX_TASK_LOCAL_ID"),
    ],
)
def test_bad_environment_names_the_variable(environ, variable):
    with pytest.raises(ValueError, match=variable):
        discover(environ)


def test_rank_outside_world_is_rejected():
    with pytest.raises(ValueError, match="outside world size"):
        discover({"RANK": "2", "WORLD_SIZE": "2", "LOCAL_RANK": "0"})


def test_discover_reads_os_environ_by_default(monkeypatch):
    for name in (
        "RANK",
        "WORLD_SIZE",
        "LOCAL_RANK",
        "SLURM_PROCID",
        "FLUX_TASK_RANK",
        "PECAN_MASTER_ADDR",
        "PECAN_MASTER_PORT",
        "MASTER_PORT",
    ):
        monkeypatch.delenv(name, raising=False)
    assert discover().launcher == "single"


# ---------------------------------------------------------------------------------------------
# Process group
# ---------------------------------------------------------------------------------------------


def test_default_backend():
    assert default_backend(True) == "nccl"
    assert default_backend(False) == "gloo"
    assert default_backend() == ("nccl" if torch.cuda.is_available() else "gloo")


def test_single_process_init_creates_no_group(restore_environ, capsys):
    device = init_distributed(DistEnv(0, 0, 1, 1, "127.0.0.1", 29500, "single"))
    assert device.type == ("cuda" if torch.cuda.is_available() else "cpu")
    assert not torch.distributed.is_initialized()
    assert os.environ["MASTER_ADDR"] == "127.0.0.1" and os.environ["WORLD_SIZE"] == "1"
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 1 and lines[0].startswith("[pecan] rank 0/1 (local 0) joined via single")
    barrier()  # no group: must return at once
    cleanup_distributed()


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _two_rank_worker(rank: int, port: int) -> None:
    """One rank of a torchrun-shaped job: discover, join over gloo, all_reduce the rank."""
    os.environ.update(
        {
            "RANK": str(rank),
            "LOCAL_RANK": str(rank),
            "WORLD_SIZE": "2",
            "LOCAL_WORLD_SIZE": "2",
            "MASTER_ADDR": "127.0.0.1",
            "MASTER_PORT": str(port),
        }
    )
    for name in ("PECAN_MASTER_ADDR", "PECAN_MASTER_PORT"):
        os.environ.pop(name, None)
    env = discover()
    device = init_distributed(env, backend="gloo", timeout_s=60)
    try:
        total = torch.tensor([float(env.rank)], device=device)
        torch.distributed.all_reduce(total)
        assert total.item() == 1.0, f"rank {rank}: all_reduce gave {total.item()}"
        barrier()
    finally:
        cleanup_distributed()


@pytest.mark.multiprocess
def test_two_gloo_ranks_all_reduce(capfd):
    context = torch.multiprocessing.start_processes(
        _two_rank_worker, args=(_free_port(),), nprocs=2, join=False, start_method="spawn"
    )
    deadline = time.monotonic() + 180
    while not context.join(timeout=5):
        if time.monotonic() > deadline:
            for process in context.processes:
                process.kill()
            pytest.fail("two-rank gloo job did not finish within 180 s")
    out = capfd.readouterr().out
    assert "[pecan] rank 0/2 (local 0) joined via torchrun, master 127.0.0.1:" in out
    assert "[pecan] rank 1/2 (local 1) joined via torchrun" in out


# ---------------------------------------------------------------------------------------------
# CPU sizing
# ---------------------------------------------------------------------------------------------

HYPERTHREADED_CPUINFO = "\n\n".join(
    f"processor\t: {cpu}\nphysical id\t: {cpu // 4}\ncore id\t\t: {cpu % 2}\nsiblings\t: 4" for cpu in range(8)
)


def test_physical_cores_counts_cores_not_threads():
    # 2 sockets x 2 cores x 2 threads.
    assert distributed._count_physical_cores(HYPERTHREADED_CPUINFO, None) == 4
    assert distributed._count_physical_cores(HYPERTHREADED_CPUINFO, {0, 1}) == 2
    assert distributed._count_physical_cores(HYPERTHREADED_CPUINFO, {0, 2}) == 1  # two threads of one core
    assert distributed._count_physical_cores("processor\t: 0\nBogoMIPS\t: 50\n", None) == 0  # no topology


def test_physical_cores_on_this_machine():
    assert 1 <= physical_cores() <= (os.cpu_count() or 1)


def test_loader_workers_per_rank(monkeypatch):
    monkeypatch.setattr(distributed, "physical_cores", lambda: 64)
    assert loader_workers_per_rank(4) == 15
    assert loader_workers_per_rank(4, reserve=0) == 16
    assert loader_workers_per_rank(64) == 0
    assert loader_workers_per_rank(128) == 0
    with pytest.raises(ValueError, match="local_world_size"):
        loader_workers_per_rank(0)


# ---------------------------------------------------------------------------------------------
# Launch scripts
# ---------------------------------------------------------------------------------------------
