"""Physical cores: psutil's count when the process may use the whole machine, the allowed CPUs' cores when a
launcher binds it to part of the machine, its logical CPUs when the kernel gives no topology."""

import psutil
import pytest

from pecan.engine import distributed
from pecan.engine.distributed import physical_cores


def machine(monkeypatch, logical: int, cores: int, allowed, cpuinfo_cores: int = 0) -> None:
    """A machine of ``logical`` CPUs on ``cores`` cores, this process allowed on ``allowed`` (None: unknown)."""
    logical_cpus = logical
    monkeypatch.setattr(psutil, "cpu_count", lambda logical=True: logical_cpus if logical else cores)
    monkeypatch.setattr(distributed, "_allowed_cpus", lambda: allowed)
    monkeypatch.setattr(distributed, "_count_physical_cores", lambda text, cpus: cpuinfo_cores)
    monkeypatch.setattr(distributed.os, "cpu_count", lambda: logical_cpus)


def test_the_whole_machine_counts_psutils_cores(monkeypatch):
    machine(monkeypatch, logical=16, cores=8, allowed=set(range(16)), cpuinfo_cores=99)
    assert physical_cores() == 8
    machine(monkeypatch, logical=16, cores=8, allowed=None, cpuinfo_cores=99)  # no affinity call (not Linux)
    assert physical_cores() == 8


def test_a_bound_process_counts_the_cores_of_its_cpus(monkeypatch):
    # Bound to 4 of 16 CPUs, hyperthread pairs of 2 cores: psutil's 8 would oversubscribe them.
    machine(monkeypatch, logical=16, cores=8, allowed={0, 1, 8, 9}, cpuinfo_cores=2)
    assert physical_cores() == 2


def test_no_topology_counts_each_allowed_cpu(monkeypatch):
    machine(monkeypatch, logical=16, cores=0, allowed=set(range(16)))
    assert physical_cores() == 16
    machine(monkeypatch, logical=16, cores=8, allowed={3, 4, 5})
    assert physical_cores() == 3


def test_on_this_machine_psutil_agrees_when_nothing_binds_the_process():
    if len(distributed._allowed_cpus() or ()) < (psutil.cpu_count() or 0):
        pytest.skip("this process is bound to part of the machine: the cpuinfo path (tests/engine/test_distributed.py)")
    assert physical_cores() == min(psutil.cpu_count(logical=False) or 1, psutil.cpu_count())
