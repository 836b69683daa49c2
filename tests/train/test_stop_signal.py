"""A second stop signal soon after the first (while the stop is written or the process exits)
still stops cleanly with exit 0 and a mid-epoch checkpoint."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.procs import app_argv


@pytest.mark.slow
@pytest.mark.parametrize("gap", [0.5, 1.5])
def test_second_stop_signal_soon_after_the_first_still_stops_cleanly(make_config, gap):
    """The second SIGUSR1 lands while the stop is being written or the process is exiting: still rc 0."""
    import os
    import signal
    import time

    from tests.procs import act_at

    path, config = make_config({"train.epochs": 2})

    def twice(process):
        os.kill(process.pid, signal.SIGUSR1)
        time.sleep(gap)
        try:
            os.kill(process.pid, signal.SIGUSR1)
        except ProcessLookupError:
            pass  # already gone: nothing left to test in this interleaving

    code, out = act_at(app_argv(path), "threads:", twice)
    assert code == 0, out[-3000:]
    assert "stopped at epoch 1" in out and "Traceback" not in out
    assert (Path(config.train.out_dir) / "checkpoints" / "mid_epoch.pt").exists()
