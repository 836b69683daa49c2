"""A tiny training run of main_app.main in-process on a data set a test has damaged: the data set's
shape, the run, its records and the edits the bad-input cases make (docs/bad-inputs.md)."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import h5py
import numpy as np
import pandas as pd

import main_app
from pecan import report
from pecan.data import layout
from pecan.data.index import split_by_complex
from tests import configs
from tests.configs import SMALL_MODEL

ROOT = Path(__file__).resolve().parents[1]
POSES = layout.DEFAULT_POSE_GROUP

# The data set of the ``data_dir`` fixture (tests/conftest.py): 2 shards x 3 complexes x (3 poses + crystal);
# val_fraction 0.34 holds 2 of the 6 complexes out.
SAMPLES_PER_COMPLEX = 4
COMPLEXES = ["c000", "c001", "c002", "c100", "c101", "c102"]
TRAIN_COMPLEXES = set(split_by_complex(pd.DataFrame({"complex_id": COMPLEXES}), 0.34, 0)[0]["complex_id"])
CLEAN_TRAIN_SAMPLES = SAMPLES_PER_COMPLEX * len(TRAIN_COMPLEXES)


def write_config(tmp_path: Path, data_dir: Path, extra: str = "") -> Path:
    """A tiny, fast run config (tests/configs.py: one line per section); ``extra`` is appended YAML."""
    settings = {
        "data.data_dir": str(data_dir),
        "data.val_fraction": 0.34,
        "model": SMALL_MODEL,
        "train.epochs": 1,
        "train.plots": False,  # ~0.6 s a run; plots are checked in tests/test_report.py and test_trainer_behaviour.py
    }
    return configs.write_config(tmp_path, settings, extra_yaml=extra, dataset={})


def run(tmp_path, data_dir, *sets, caplog, capsys, extra: str = "") -> tuple[int, str]:
    """main_app.main in-process; returns (exit code, stderr + log text)."""
    caplog.set_level(logging.INFO)
    argv = [str(write_config(tmp_path, data_dir, extra))]
    for item in sets:
        argv += ["--set", item]
    code = main_app.main(argv)
    return code, capsys.readouterr().err + caplog.text


def records(tmp_path) -> list[dict]:
    return report.read_records(tmp_path / "run" / "epochs.jsonl")


def report_lines(out_dir) -> list[dict]:
    lines = (Path(out_dir) / "epochs.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def edit_csv(data_dir: Path, change) -> None:
    frame = pd.read_csv(data_dir / "index.csv", dtype={"pdbid": str, "poseid": str})
    change(frame).to_csv(data_dir / "index.csv", index=False)


def first_pose(data_dir: Path) -> tuple[Path, str]:
    """(shard, HDF5 path of its first docked pose group)."""
    return data_dir / "shard_0.hdf5", f"c000/{POSES}/c000_pose0"


def derive(*sets):
    return ("data.train_csvs=null", 'data.train_fns=["*.hdf5"]', *sets)


def rewrite_pose(data_dir: Path, change, dtype=None) -> None:
    """Replace the first pose's ``data`` with ``change(atoms)`` (a new dataset, optionally of another dtype)."""
    shard, pose = first_pose(data_dir)
    with h5py.File(shard, "a") as handle:
        atoms = handle[f"{pose}/data"][()].astype(dtype or np.float32)
        del handle[f"{pose}/data"]
        handle[f"{pose}/data"] = change(atoms)
