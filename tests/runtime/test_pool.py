"""The job pool: every result once, a job's error raised in the parent, and the jobs in flight at a stop."""

import signal

import pytest

from pecan.runtime.pool import Stopped, results_of


def _square(k: int) -> int:
    if k < 0:
        raise ValueError(f"negative job {k}")
    return k * k


@pytest.mark.parametrize("workers", [1, 2])
def test_every_result_comes_back_once(workers):
    with results_of(_square, [1, 2, 3, 4, 5], workers) as results:
        assert sorted(results) == [1, 4, 9, 16, 25]


def test_a_job_error_is_raised_in_the_parent():
    with pytest.raises(ValueError, match="negative job -2"):
        with results_of(_square, [1, -2, 3], 2) as results:
            list(results)


def test_a_stop_names_the_job_that_was_running():
    def stop_at_two(k):
        if k == 2:
            raise Stopped(signal.SIGTERM)
        return k

    with pytest.raises(Stopped) as stop:
        with results_of(stop_at_two, [1, 2, 3], 1) as results:
            list(results)
    assert stop.value.in_flight == [2] and stop.value.exit_code == 143 and stop.value.name == "SIGTERM"


def test_a_stop_during_an_import_is_raised_after_it(tmp_path, monkeypatch):
    """An exception raised inside an import could land in a C++ extension's module init and abort the
    process: the stop waits for the import to finish."""
    import os
    import sys
    import threading

    from pecan.runtime.pool import stop_on_signals

    (tmp_path / "slow_module.py").write_text("import time\ntime.sleep(1.0)\nLOADED = True\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    threading.Timer(0.3, os.kill, (os.getpid(), signal.SIGINT)).start()
    with pytest.raises(Stopped) as stop:
        with stop_on_signals():
            import slow_module  # noqa: F401

            for _ in range(50):  # the stop arrives here, after the import
                threading.Event().wait(0.05)
    assert stop.value.name == "SIGINT" and sys.modules["slow_module"].LOADED
