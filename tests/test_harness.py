"""The test helpers themselves: the 2-process harness sets torchrun's env:// contract, shows both ranks'
output when one fails, and kills both when they hang; the config factory writes what it is given."""

import sys
import time

import pytest
import yaml

from pecan.engine.distributed import discover
from tests import configs
from tests.ddp import run_ranks

SHOW_ENV = "import os; print(os.environ['RANK'], os.environ['LOCAL_RANK'], os.environ['WORLD_SIZE'], \
os.environ['LOCAL_WORLD_SIZE'], os.environ['MASTER_ADDR'], os.environ['MASTER_PORT'])"


def test_ranks_get_the_torchrun_variables_and_one_port():
    codes, out = run_ranks([sys.executable, "-c", SHOW_ENV], timeout=60)
    rows = [line.split() for line in out.splitlines()]
    assert codes == [0, 0] and [row[:5] for row in rows] == [
        ["0", "0", "2", "2", "127.0.0.1"],
        ["1", "1", "2", "2", "127.0.0.1"],
    ]
    assert rows[0][5] == rows[1][5] and 1024 <= int(rows[0][5]) < 65536
    env = discover(
        dict(zip(("RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"), rows[1]))
    )
    assert (env.launcher, env.rank, env.world_size, env.master_port) == ("torchrun", 1, 2, int(rows[1][5]))


def test_a_failing_rank_fails_the_test_showing_both_outputs():
    code = "import os, sys; r = os.environ['RANK']; print('hello from', r); sys.exit(3 if r == '1' else 0)"
    with pytest.raises(AssertionError) as failed:
        run_ranks([sys.executable, "-c", code], timeout=60)
    text = str(failed.value)
    assert "ranks [0, 3]" in text and "hello from 0" in text and "hello from 1" in text


@pytest.mark.slow
def test_a_hanging_rank_is_killed_with_its_peer_at_the_timeout():
    code = "import os, time; r = os.environ['RANK']; print('up', r, flush=True); time.sleep(0 if r == '0' else 120)"
    start = time.monotonic()
    # The timeouts are waited out whole: 3 s leaves a loaded machine time to start both interpreters.
    codes, out = run_ranks([sys.executable, "-c", code], timeout=3, check=False)
    assert time.monotonic() - start < 30 and codes[0] == 0 and codes[1] < 0  # rank 1 died of SIGKILL
    assert "up 0" in out and "up 1" in out
    with pytest.raises(AssertionError, match="timed out after 1 s"):
        run_ranks([sys.executable, "-c", code], timeout=1)


def test_config_factory_sets_replaces_and_drops(tmp_path):
    settings = {"train.epochs": 1, "model": {"name": "ggcnn"}, "data.val_fraction": configs.DROP, "trace.enabled": True}
    path, config = configs.make_config(tmp_path, settings, "data.batch_size=2")
    sections = [yaml.safe_load(line) for line in path.read_text().splitlines()]
    assert [list(s) for s in sections] == [["data"], ["model"], ["train"], ["trace"]]  # one line per section
    assert sections[1] == {"model": {"name": "ggcnn"}} and "val_fraction" not in sections[0]["data"]
    assert (config.train.epochs, config.model.name, config.data.batch_size, config.trace.enabled) == (
        1,
        "ggcnn",
        2,
        True,
    )
    assert config.data.val_fraction == 0.2 and (tmp_path / "data" / "index.csv").exists()
