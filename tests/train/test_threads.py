"""Intra-op threads give way to other work on the node: a start under load takes no more threads than the idle
CPUs allow, and an automatically sized run starved of CPU in an epoch lowers its threads for the next ones;
an explicit count and a deterministic run keep theirs (benchmarks/bench_threads.py measured why)."""

import logging
from types import SimpleNamespace

import pytest
import torch

from pecan.engine import distributed
from pecan.engine.distributed import ThreadPlan
from pecan.train.threads import after_epoch, fit_to_load, size_threads

STARVED = {"epoch": 1, "cpu_share_min": 0.45, "cpu_share_min_rank": 1, "intra_op_threads": 2, "wall_s": 5.0}


@pytest.fixture
def keep_threads():
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


@pytest.mark.parametrize(
    "planned, load, cpus, ranks, workers, expected",
    [
        (2, 0.1, 2, 1, 0, 2),  # an idle laptop keeps both cores
        (2, 1.0, 2, 1, 0, 1),  # one other busy process on 2 cores
        (2, 7.5, 2, 1, 0, 1),  # never below one
        (8, 0.0, 16, 2, 0, 8),
        (7, 8.0, 16, 2, 1, 3),  # half the node busy: half the threads, less the loader worker
    ],
)
def test_threads_fit_the_idle_cpus(planned, load, cpus, ranks, workers, expected):
    plan = ThreadPlan(intra_op_threads=planned, num_workers=workers, cores_per_rank=cpus // ranks, source="cores")
    assert fit_to_load(plan, load, cpus, ranks).intra_op_threads == expected


def config(intra_op_threads=0, deterministic=False):
    return SimpleNamespace(
        data=SimpleNamespace(num_workers=0, io_mode="packed"),
        train=SimpleNamespace(intra_op_threads=intra_op_threads, deterministic=deterministic),
    )


def test_a_start_on_a_loaded_node_takes_one_thread_and_says_why(monkeypatch, caplog, keep_threads):
    monkeypatch.setattr(distributed, "physical_cores", lambda: 2)
    monkeypatch.setattr("os.cpu_count", lambda: 2)
    for name in distributed.THREAD_ENV:
        monkeypatch.delenv(name, raising=False)
    env = SimpleNamespace(local_world_size=1, is_main=True)
    with caplog.at_level(logging.INFO):
        plan = size_threads(config(), env, load=1.3)
    assert plan.intra_op_threads == torch.get_num_threads() == 1
    assert "2 would fit the cores, but the load average 1.3 shows other work" in caplog.text
    assert size_threads(config(), env, load=0.2).intra_op_threads == 2
    assert size_threads(config(deterministic=True), env, load=1.3).intra_op_threads == 2
    assert size_threads(config(intra_op_threads=2), env, load=1.3).intra_op_threads == 2


def test_a_starved_epoch_lowers_automatic_threads_for_the_next(caplog, keep_threads):
    torch.set_num_threads(2)
    plan = ThreadPlan(intra_op_threads=2, num_workers=0, cores_per_rank=2, source="cores")
    with caplog.at_level(logging.WARNING):
        lowered = after_epoch(plan, STARVED, deterministic=False, is_main=True)
    assert lowered.intra_op_threads == torch.get_num_threads() == 1
    assert "intra-op threads lowered from 2 to 1 per rank for the next epochs: rank 1 got 45%" in caplog.text


@pytest.mark.parametrize("source, deterministic", [("config", False), ("env", False), ("cores", True)])
def test_a_chosen_or_deterministic_count_is_kept_when_starved(keep_threads, source, deterministic):
    torch.set_num_threads(2)
    plan = ThreadPlan(intra_op_threads=2, num_workers=0, cores_per_rank=2, source=source)
    assert after_epoch(plan, STARVED, deterministic, is_main=True) is plan and torch.get_num_threads() == 2


def test_an_epoch_that_got_its_cpu_keeps_the_threads(keep_threads):
    torch.set_num_threads(2)
    plan = ThreadPlan(intra_op_threads=2, num_workers=0, cores_per_rank=2, source="cores")
    assert after_epoch(plan, {**STARVED, "cpu_share_min": 0.9}, False, True) is plan and torch.get_num_threads() == 2
