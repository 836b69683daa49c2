"""Two-rank gloo DDP (the 2-process harness) for one graph variant (sgcnn) and the voxel variant (cnn3d)."""

import pytest

from pecan import report
from tests.ddp import run_ranks_ok
from tests.model.test_variants_data import TINY_SETTINGS
from tests.procs import app_argv
from tests.train.helpers import tiny_run

pytestmark = [pytest.mark.multiprocess, pytest.mark.slow]


@pytest.mark.parametrize("variant", ["sgcnn", "cnn3d"])
def test_two_ranks_train_in_sync(tmp_path, variant):
    path, _ = tiny_run(tmp_path, *TINY_SETTINGS[variant], settings={"model": {"name": variant}})
    out = run_ranks_ok(app_argv(path, "train.epochs=1", "data.num_workers=0", *TINY_SETTINGS[variant]))
    assert out.count("joined via torchrun") == 2
    records = report.read_records(tmp_path / "run" / "epochs.jsonl")
    assert len(records) == 1 and records[0]["world_size"] == 2 and records[0]["ranks_in_sync"]
