"""Ranks that disagree stop the run naming them: ranks started with different settings (exit 2, the
key and each rank's value), weights that differ between ranks (exit 1)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.procs import app_argv


@pytest.mark.slow
@pytest.mark.multiprocess
def test_ranks_started_with_different_settings_stop_at_start_naming_ranks_and_key(make_config):
    import shlex

    from tests.ddp import run_ranks

    path, config = make_config({"train.epochs": 1})
    # The same command on both ranks; only rank 1 adds a --set (as a per-rank wrapper script might).
    line = shlex.join(app_argv(path)) + ' $([ "$RANK" = 1 ] && echo --set train.lr=0.3)'
    codes, out = run_ranks(["sh", "-c", line], check=False, timeout=240)
    assert codes == [2, 2], out[-4000:]
    assert "the ranks started with different settings: rank(s) 1 differ from rank 0" in out
    assert "train.lr: rank 0 0.003, rank 1 0.3" in out and "Traceback" not in out
    assert not (Path(config.train.out_dir) / "epochs.jsonl").exists()


def test_weights_that_differ_between_ranks_stop_the_run_naming_them(monkeypatch):
    import torch

    from pecan.engine.distributed import DistEnv
    from pecan.runtime.errors import RanksDisagree, exit_code
    from pecan.train import components

    monkeypatch.setattr(
        components, "gather_varlen", lambda t, env, what="": torch.tensor([1.5, 1.5, 2.5], dtype=t.dtype)
    )
    env = DistEnv(
        rank=0,
        world_size=3,
        local_rank=0,
        local_world_size=3,
        master_addr="127.0.0.1",
        master_port=1,
        launcher="single",
    )
    with pytest.raises(RanksDisagree, match=r"rank\(s\) 2 disagree with rank 0") as err:
        components.weights_in_sync(torch.nn.Linear(2, 1), env, torch.device("cpu"))
    assert exit_code(err.value) == 1
    monkeypatch.setattr(components, "gather_varlen", lambda t, env, what="": torch.tensor([1.5, 1.5], dtype=t.dtype))
    assert components.weights_in_sync(torch.nn.Linear(2, 1), env, torch.device("cpu"))["ranks_in_sync"] is True
