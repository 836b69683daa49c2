"""Two-rank gloo DDP for one graph variant (sgcnn) and the voxel variant (cnn3d)."""

import pytest

from pecan import report
from tests.model.test_variants_data import TINY_SETTINGS
from tests.train.helpers import tiny_run
from tests.train.test_ddp import run_ok, torchrun

pytestmark = [pytest.mark.multiprocess, pytest.mark.slow]


@pytest.mark.parametrize("variant", ["sgcnn", "cnn3d"])
def test_two_ranks_train_in_sync(tmp_path, variant):
    path, _ = tiny_run(tmp_path)
    path.write_text(path.read_text().replace("model: {hidden: 16, layers: 2, rbf: 8}", f"model: {{name: {variant}}}"))
    settings = ["train.epochs=1", "data.num_workers=0", *TINY_SETTINGS[variant]]
    out = run_ok(
        torchrun(
            "--standalone", "--nproc_per_node=2", "main_app.py", str(path), *sum((["--set", s] for s in settings), [])
        )
    )
    assert out.count("joined via torchrun") == 2
    records = report.read_records(tmp_path / "run" / "epochs.jsonl")
    assert len(records) == 1 and records[0]["world_size"] == 2 and records[0]["ranks_in_sync"]
