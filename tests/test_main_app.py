"""End to end: generated shards -> main_app -> a model that learned, and the report files."""

import subprocess
import sys
from pathlib import Path

import pytest

from pecan import report
from pecan.synthetic import generate_dataset
from tests.procs import clean_env

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_two_epochs_on_generated_data(tmp_path):
    generate_dataset(
        tmp_path / "data",
        n_shards=2,
        complexes_per_shard=4,
        poses_per_complex=(6, 8),
        pocket_atoms=(300, 320),
        ligand_atoms=(15, 22),
        seed=3,
        progress=False,
    )
    done = subprocess.run(
        [
            sys.executable,
            "main_app.py",
            "configs/demo.yaml",
            "--set",
            f"data.data_dir={tmp_path / 'data'}",
            "--set",
            f"train.out_dir={tmp_path / 'run'}",
            "--set",
            "train.epochs=2",
            "--set",
            "model.hidden=16",
            "--set",
            "model.layers=2",
            "--set",
            "data.batch_size=4",
            "--set",
            "train.lr=0.003",
            "--set",
            "train.warmup_steps=0",
            "--set",
            "data.val_fraction=0.25",
            "--set",
            "train.progress=false",
            # These shards, not the demo's own: with its synthetic section on, demo.yaml would replace them by a
            # generation of its own size (48 complexes) before training (first use: tests/synthetic).
            "--set",
            "synthetic.enabled=false",
        ],
        cwd=ROOT,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    records = report.read_records(tmp_path / "run" / "epochs.jsonl")
    assert len(records) == 2
    assert records[1]["train_loss"] < records[0]["train_loss"]
    for record in records:
        assert all(field in record for field in report.REQUIRED_FIELDS)
        assert record["h5_calls_per_sample"] == 0 and record["io_mode"] == "packed"
    assert "epoch   2 |" in done.stdout and "data_wait" in done.stdout
    assert (tmp_path / "run" / "checkpoints" / "last.pt").exists()
    assert (tmp_path / "run" / "config.yaml").read_text().count("out_dir") == 1


@pytest.mark.slow
def test_bad_config_exits_with_named_key(tmp_path):
    config = tmp_path / "bad.yaml"
    config.write_text("data: {data_dir: x, batchsize: 3}\n")
    done = subprocess.run(
        [sys.executable, "main_app.py", str(config)], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 2 and "data.batchsize" in done.stderr and "bad.yaml" in done.stderr


@pytest.mark.slow
def test_missing_data_exits_with_named_file(tmp_path):
    done = subprocess.run(
        [
            sys.executable,
            "main_app.py",
            "configs/demo.yaml",
            "--set",
            f"data.data_dir={tmp_path / 'nothing'}",
            "--set",
            f"train.out_dir={tmp_path / 'run'}",
            "--set",
            "synthetic.enabled=false",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1 and "nothing" in done.stderr


def test_config_reference_page_is_current():
    from pecan.config.docs import describe

    page = (ROOT / "docs" / "configuration.md").read_text()
    assert describe() in page, "run: python -m pecan.config.docs --update-docs"
