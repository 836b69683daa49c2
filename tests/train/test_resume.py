"""Resuming a run: from best.pt after a damaged last.pt (each epoch recorded once), after the
labels changed in place (one warning), after kill -9 at each write point (each epoch once), a resume that
fails keeps config.yaml. The rate of a resumed epoch (only this part's samples) is checked on the stopped runs
of tests/train/test_lifecycle.py."""

from __future__ import annotations

import logging
import signal
import subprocess
import sys
import textwrap

import pytest

import main_app
from pecan import report
from tests.app_run import ROOT, edit_csv, records, run, write_config
from tests.procs import clean_env


@pytest.mark.slow
def test_resume_from_best_after_a_damaged_last_keeps_each_epoch_once(tmp_path, data_dir, caplog, capsys):
    """best.pt holds epoch 1, last.pt (epoch 3) is damaged: epochs 2 and 3 are trained again, and
    epochs.jsonl reads 1, 2, 3, 4 — the abandoned records are superseded, not kept beside the new ones."""
    checkpoints = tmp_path / "run" / "checkpoints"
    assert run(tmp_path, data_dir, caplog=caplog, capsys=capsys)[0] == 0
    epoch_one = (checkpoints / "last.pt").read_bytes()
    assert run(tmp_path, data_dir, "train.epochs=3", caplog=caplog, capsys=capsys)[0] == 0
    assert [r["epoch"] for r in records(tmp_path)] == [1, 2, 3]
    (checkpoints / "best.pt").write_bytes(epoch_one)
    (checkpoints / "last.pt").write_bytes(b"not a checkpoint")
    code, text = run(tmp_path, data_dir, "train.epochs=4", caplog=caplog, capsys=capsys)
    assert code == 0, text
    assert "resumed from" in text and "best.pt after epoch 1" in text
    assert "superseded" in text
    assert [r["epoch"] for r in records(tmp_path)] == [1, 2, 3, 4]


@pytest.mark.slow
def test_resume_after_the_labels_changed_in_place_says_so(tmp_path, data_dir, caplog, capsys):
    """Labels flipped in the index CSV between two starts of one run: the resumed run warns, naming the
    checkpoint and both digests; an unchanged index resumes without the warning."""
    assert run(tmp_path, data_dir, caplog=caplog, capsys=capsys)[0] == 0
    code, text = run(tmp_path, data_dir, "train.epochs=3", caplog=caplog, capsys=capsys)
    assert code == 0 and "resumed from" in text and "training data changed" not in text
    caplog.clear()
    edit_csv(data_dir, lambda f: f.assign(label=1 - f["label"], rmsd=""))
    code, text = run(tmp_path, data_dir, "train.epochs=4", caplog=caplog, capsys=capsys)
    assert code == 0, text
    assert caplog.text.count("the training data changed since checkpoint") == 1 and "last.pt" in text


def test_a_fresh_start_in_a_used_out_dir_sets_the_earlier_records_aside(tmp_path, data_dir, caplog, capsys):
    """train.resume=never in a run directory with an earlier run's epochs.jsonl: the new run's epochs.jsonl
    holds its own epochs only (each once), the earlier records are kept beside it under another name."""
    assert run(tmp_path, data_dir, "train.epochs=2", caplog=caplog, capsys=capsys)[0] == 0
    earlier = (tmp_path / "run" / "epochs.jsonl").read_text()
    code, text = run(tmp_path, data_dir, "train.epochs=2", "train.resume=never", caplog=caplog, capsys=capsys)
    assert code == 0, text
    assert [r["epoch"] for r in records(tmp_path)] == [1, 2]
    kept = sorted((tmp_path / "run").glob("epochs.before-*.jsonl"))
    assert len(kept) == 1 and kept[0].read_text() == earlier
    assert "holds the epoch records of an earlier run" in text and "train.resume is never" in text
    code, text = run(tmp_path, data_dir, "train.epochs=3", caplog=caplog, capsys=capsys)  # auto: resumes
    assert code == 0 and "resumed from" in text
    assert [r["epoch"] for r in records(tmp_path)] == [1, 2, 3]
    assert len(list((tmp_path / "run").glob("epochs.before-*.jsonl"))) == 1


@pytest.mark.slow
def test_failed_resume_keeps_config_yaml(tmp_path, data_dir, caplog, capsys):
    code, _ = run(tmp_path, data_dir, "train.max_steps_per_epoch=1", caplog=caplog, capsys=capsys)
    assert code == 0
    saved = (tmp_path / "run" / "config.yaml").read_text()
    code, text = run(tmp_path, data_dir, "train.epochs=2", "model.hidden=12", caplog=caplog, capsys=capsys)
    assert code == 2 and "model.hidden: checkpoint 8, config 12" in text
    assert (tmp_path / "run" / "config.yaml").read_text() == saved


KILLER = textwrap.dedent("""
    import os, signal, sys
    import main_app
    from pecan import report
    from pecan.engine import checkpoint

    point, target = sys.argv[1], int(sys.argv[2])
    saves = []
    real_save, real_write, real_replace = checkpoint.save_checkpoint, checkpoint._write_bytes, os.replace

    def half_then_die(out, data):
        real_write(out, data[:len(data) // 2])
        out.flush()
        os.kill(os.getpid(), signal.SIGKILL)

    def save(path, payload):
        if path.name == "last.pt":
            saves.append(path)
        hit = path.name == "last.pt" and len(saves) == target
        if hit and point == "checkpoint_temp":
            checkpoint._write_bytes = half_then_die
        result = real_save(path, payload)
        if hit and point == "after_checkpoint_rename":
            os.kill(os.getpid(), signal.SIGKILL)
        return result

    records = []
    def replace(src, dst, *args, **kwargs):
        if str(dst).endswith("epochs.jsonl"):
            records.append(dst)
            if point == "record_write" and len(records) == target:
                os.kill(os.getpid(), signal.SIGKILL)
        return real_replace(src, dst, *args, **kwargs)

    checkpoint.save_checkpoint = save
    os.replace = replace
    sys.exit(main_app.main(sys.argv[3:]))
""")


@pytest.mark.slow
@pytest.mark.parametrize(
    "point, temp_left",
    [
        ("checkpoint_temp", "checkpoints/.last.pt.*.tmp"),
        ("after_checkpoint_rename", None),
        ("record_write", ".epochs.jsonl.*.tmp"),
    ],
)
def test_kill_9_then_resume_keeps_every_epoch_once(tmp_path, data_dir, caplog, capsys, point, temp_left):
    config = write_config(tmp_path, data_dir)
    sets = ["--set", "train.epochs=3", "--set", "train.max_steps_per_epoch=2"]
    done = subprocess.run(
        [sys.executable, "-c", KILLER, point, "2", str(config), *sets],
        cwd=ROOT,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == -signal.SIGKILL, done.stderr[-2000:]
    run_dir = tmp_path / "run"
    assert (run_dir / ".pecan.lock").exists()  # the killed run could not release it
    if temp_left:
        assert list(run_dir.glob(temp_left)), "the kill should leave the writer's temp file behind"
    caplog.set_level(logging.INFO)
    assert main_app.main([str(config), *sets]) == 0
    epochs = [r["epoch"] for r in report.read_records(run_dir / "epochs.jsonl")]
    assert epochs == [1, 2, 3]
    assert not list(run_dir.glob("**/*.tmp")) and not (run_dir / ".pecan.lock").exists()
