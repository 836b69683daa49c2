"""Every way `pecan synth` writes data leaves the synthetic marker beside it, so a checkpoint trained on that data
records ``training_data.kind: synthetic`` (and scoring real poses with it warns)."""

from __future__ import annotations

import sys

import main_app
from pecan.synthetic.writer import MARKER_NAME
from pecan.train.checkpoint import load_checkpoint
from tests.configs import write_config
from tests.procs import clean_env, run_checked

TINY = ["--shards", "1", "--complexes-per-shard", "4", "--poses-per-complex", "3:4", "--pocket-atoms", "120:140"]
TINY += ["--ligand-atoms", "10:12", "--no-progress"]


def test_plain_synth_out_is_recorded_as_synthetic_by_a_checkpoint_trained_on_it(tmp_path):
    data = tmp_path / "data"
    run_checked([sys.executable, "-m", "pecan", "synth", "--out", str(data), *TINY], timeout=120, env=clean_env())
    assert (data / MARKER_NAME).is_file()
    settings = {"data.val_fraction": 0.5, "model": {"hidden": 8, "layers": 1, "rbf": 4}}
    path = write_config(tmp_path, settings, dataset={})
    assert main_app.main([str(path), "--set", "train.epochs=1"]) == 0
    record = load_checkpoint(tmp_path / "run" / "checkpoints" / "last.pt")["training_data"]
    assert record["kind"] == "synthetic"


def test_plain_synth_over_an_older_set_leaves_a_marker_for_the_new_one(tmp_path):
    data = tmp_path / "data"
    for seed in ("1", "2"):
        run_checked([sys.executable, "-m", "pecan", "synth", "--out", str(data), "--seed", seed, *TINY], timeout=120)
    assert '"seed": 2' in (data / MARKER_NAME).read_text()
