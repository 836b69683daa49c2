"""A resumed run keeps its learning-rate schedule: raising train.epochs after a finished run continues at the
floor (no silent warm restart), a warm restart is the named choice train.schedule_on_resume: restart, the
resume line says which, a changed global batch is named; so is a validation set of one complex."""

from __future__ import annotations

import pytest
import torch

from pecan import report
from pecan.train.components import CosineSchedule, cosine_schedule
from tests.app_run import records, run


def test_an_extended_schedule_continues_from_the_factor_reached():
    schedule = cosine_schedule(100, 10)
    reached = schedule(60)
    longer = schedule.extended(60, 200, restart=False)
    assert [longer(s) for s in (0, 30, 59)] == [schedule(s) for s in (0, 30, 59)]
    assert longer(60) == pytest.approx(reached)
    assert reached > longer(130) > longer(199) and longer(200) == pytest.approx(0.05)
    finished = schedule.extended(100, 150, restart=False)
    assert finished(100) == pytest.approx(0.05) and finished(140) == pytest.approx(0.05)


def test_a_warm_restart_warms_up_again_from_the_anchor():
    restarted = cosine_schedule(100, 10).extended(100, 200, restart=True)
    assert restarted(100) == pytest.approx(0.1) and restarted(109) == pytest.approx(1.0)
    assert restarted(200) == pytest.approx(0.05) and restarted(150) < restarted(110)


def test_the_schedule_travels_in_the_scheduler_state():
    """LambdaLR saves a callable object's fields: the anchor survives a checkpoint."""
    model = torch.nn.Linear(2, 1)
    optimizer = torch.optim.AdamW(model.parameters(), lr=1.0)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, cosine_schedule(10, 0).extended(10, 20, False))
    state = scheduler.state_dict()
    again = torch.optim.lr_scheduler.LambdaLR(optimizer, cosine_schedule(99, 0))
    again.load_state_dict(state)
    assert again.lr_lambdas[0] == CosineSchedule(20, 0, 0.05, 10, 0.05, False, 10)


@pytest.mark.slow
@pytest.mark.parametrize("choice", ["continue", "restart"])
def test_raising_epochs_after_a_finished_run(tmp_path, data_dir, caplog, capsys, choice):
    lr = 0.002
    code, text = run(tmp_path, data_dir, "train.epochs=2", f"train.lr={lr}", caplog=caplog, capsys=capsys)
    assert code == 0, text
    assert records(tmp_path)[-1]["lr"] == pytest.approx(0.05 * lr)
    code, text = run(
        tmp_path,
        data_dir,
        "train.epochs=4",
        f"train.lr={lr}",
        f"train.schedule_on_resume={choice}",
        caplog=caplog,
        capsys=capsys,
    )
    assert code == 0, text
    assert f"train.schedule_on_resume: {choice}" in text
    third, fourth = records(tmp_path)[2:4]
    if choice == "continue":
        assert third["lr"] == pytest.approx(0.05 * lr) and fourth["lr"] == pytest.approx(0.05 * lr)
        assert "continued from" in text
    else:
        assert third["lr"] > 0.3 * lr and fourth["lr"] == pytest.approx(0.05 * lr)
        assert "warm restart" in text


@pytest.mark.slow
def test_a_resume_of_the_same_length_says_the_schedule_continues(tmp_path, data_dir, caplog, capsys):
    assert run(tmp_path, data_dir, "train.epochs=1", caplog=caplog, capsys=capsys)[0] == 0
    code, text = run(tmp_path, data_dir, "train.epochs=1", caplog=caplog, capsys=capsys)
    assert code == 0 and "the checkpoint's schedule continues" in text and "global batch" not in text
    caplog.clear()
    code, text = run(tmp_path, data_dir, "train.epochs=3", "data.batch_size=2", caplog=caplog, capsys=capsys)
    assert code == 0, text
    assert "global batch of 4" in text and "this run's is 2" in text and "is not scaled" in text
    assert "the run now ends after" in text
    # runs.jsonl records each start's resume: none, the same schedule, then the continued one and the batch.
    starts = report.read_records(tmp_path / "run" / "runs.jsonl")
    assert starts[0]["resume"] is None
    assert starts[1]["resume"]["schedule"] == "same" and "global_batch" not in starts[1]["resume"]
    resumed = starts[2]["resume"]
    assert resumed["schedule"] == "continue" and resumed["steps"] > resumed["steps_before"] == resumed["at_step"]
    assert resumed["lr"] == pytest.approx(records(tmp_path)[0]["lr"])  # the finished run's floor, continued
    assert resumed["global_batch"] == {
        "before": 4,
        "ranks_before": 1,
        "batch_size_before": 4,
        "now": 2,
        "ranks": 1,
        "batch_size": 2,
    }


@pytest.mark.slow
def test_a_validation_set_of_one_complex_is_named(tmp_path, data_dir, caplog, capsys):
    code, text = run(tmp_path, data_dir, "data.val_fraction=0.1", caplog=caplog, capsys=capsys)
    assert code == 0, text
    assert "the validation set holds 1 complex" in text and "data.val_fraction" in text
    caplog.clear()
    code, text = run(tmp_path, data_dir, "data.val_fraction=0.3", "train.resume=never", caplog=caplog, capsys=capsys)
    assert code == 0 and "the validation set holds" not in text
