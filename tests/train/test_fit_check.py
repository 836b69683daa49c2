"""The per-epoch fit check (train.fit_check_complexes, train.fit_check_every): its figures by hand, its cadence, and
in a run's records and report."""

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
import torch

from pecan import cli, report
from pecan import config as config_module
from pecan.engine.distributed import discover
from pecan.train.fit_check import FIT_FIELDS, FitCheck, docking_top1, sample_rows, teacher_agreement
from pecan.train.trainer import Trainer
from tests.train.helpers import tiny_run


def test_teacher_agreement_and_spearman_by_hand():
    # complex 1: the model's top pose is the teacher's first, same order (rho 1); complex 2: the model's top is the
    # teacher's last, reversed order (rho -1); complex 3: one pose (agreement only)
    scores = np.array([3.0, 2.0, 1.0, 5.0, 4.0, 3.0, 0.0])
    teacher = np.array([0.9, 0.5, 0.1, 0.1, 0.2, 0.3, 0.4])
    complexes = np.array([1, 1, 1, 2, 2, 2, 3])
    agree, rho = teacher_agreement(scores, teacher, complexes)
    assert agree == pytest.approx(2 / 3)
    assert rho == pytest.approx(0.0)  # the median of 1 and -1


def test_docking_top1_reads_the_lowest_score_and_skips_poses_without_one():
    # complex 0: the best score (-9) is the near-native pose; complex 1: the best (-8) is a decoy; pose 5 unscored
    score = np.array([-9.0, -7.0, -6.0, -8.0, 0.0, 0.0])
    features = np.zeros((6, 3), dtype=np.float32)
    features[:, 0] = score / 10
    features[5, 2] = 1.0
    table = SimpleNamespace(
        docking_features=features,
        label=np.array([1, 0, 1, 0, 0, 1], dtype=np.float32),
        complex_code=np.array([0, 0, 1, 1, 1, 1]),
    )
    assert docking_top1(table, np.arange(6)) == pytest.approx(0.5)
    assert np.isnan(docking_top1(SimpleNamespace(docking_features=None), np.arange(6)))


def test_the_sample_is_fixed_by_the_seed_and_holds_whole_complexes_without_crystals():
    table = SimpleNamespace(
        is_crystal=np.array([1, 0, 0, 1, 0, 0, 1, 0, 0], dtype=bool), complex_code=np.repeat([0, 1, 2], 3)
    )
    rows = sample_rows(table, 2, seed=0)
    assert (rows == sample_rows(table, 2, seed=0)).all()
    assert len(rows) == 4 and not table.is_crystal[rows].any()
    assert len(np.unique(table.complex_code[rows])) == 2


@pytest.mark.slow
def test_a_run_with_a_teacher_records_and_reports_the_fit(tmp_path, capsys):
    tiny_run(tmp_path)
    csv = tmp_path / "data" / "index.csv"
    frame = pd.read_csv(csv)
    frame["cnn"] = np.where(frame["is_crystal"] == 0, 1.0 / (1.0 + frame["rmsd"]), np.nan)
    frame.to_csv(csv, index=False)
    _, config = tiny_run(
        tmp_path,
        "train.epochs=1",
        "data.target_column=cnn",
        "train.target_mix=0.5",
        "train.ranking_loss=teacher_kl",
        "train.ranking_loss_weight=0.5",
        "train.fit_check_complexes=3",
    )
    trainer = Trainer.from_config(config, discover({}), torch.device("cpu"))
    try:
        records = trainer.fit()
    finally:
        trainer.close()
    written = report.read_records(tmp_path / "run" / "epochs.jsonl")[-1]
    assert written["fit_complexes"] == 3 and records[-1]["fit_complexes"] == 3
    assert all(field in written for field in FIT_FIELDS) and written["fit_check_s"] > 0
    assert 0.0 <= written["fit_teacher_top1"] <= 1.0 and -1.0 <= written["fit_teacher_spearman"] <= 1.0
    assert " | fit top1 " in capsys.readouterr().out


def test_the_epoch_line_shows_the_fit_only_when_checked():
    base = {"epoch": 1, "wall_s": 1.0}
    assert "fit" not in report.epoch_line(base)
    line = report.epoch_line({**base, "fit_top1": 0.5, "fit_docking_top1": 0.75})
    assert line.endswith(" | fit top1 0.50 (docking 0.75)")
    compact = report.compact_line({**base, "fit_top1": 0.5, "fit_docking_top1": 0.75}, 2, 0.0)
    assert " | fit top1 0.50 (docking 0.75) | ETA " in compact
    teacher = {**base, "fit_top1": 0.5, "fit_docking_top1": float("nan"), "fit_teacher_top1": 1.0}
    assert report.epoch_line({**teacher, "fit_teacher_spearman": 0.25}).endswith(
        " | fit top1 0.50 (docking n/a), teacher top1 1.00, rho 0.25"
    )


def test_every_nth_epoch_and_always_the_last():
    check = FitCheck(None, 0, seed=0, batch_size=4, device="cpu", amp="off", every=3)
    assert [epoch for epoch in range(1, 8) if check.due(epoch, 7)] == [3, 6, 7]
    assert [epoch for epoch in range(1, 7) if check.due(epoch, 6)] == [3, 6]
    every_epoch = FitCheck(None, 0, seed=0, batch_size=4, device="cpu", amp="off")
    assert all(every_epoch.due(epoch, 4) for epoch in range(1, 5))


@pytest.mark.parametrize("value", [0, -2])
def test_fit_check_every_below_one_is_an_error_naming_the_key(tmp_path, value):
    with pytest.raises(config_module.ConfigError, match=r"train\.fit_check_every.*must be >= 1"):
        config_module.load(None, [f"data.data_dir={tmp_path}", f"train.fit_check_every={value}"])
    assert config_module.load(None, [f"data.data_dir={tmp_path}"]).train.fit_check_every == 1


@pytest.mark.slow
def test_a_run_checks_every_second_epoch_and_the_last_and_pecan_runs_reads_it(tmp_path, capsys):
    _, config = tiny_run(tmp_path, "train.epochs=3", "train.fit_check_complexes=2", "train.fit_check_every=2")
    trainer = Trainer.from_config(config, discover({}), torch.device("cpu"))
    try:
        trainer.fit()
    finally:
        trainer.close()
    run_dir = tmp_path / "run"
    written = report.read_records(run_dir / "epochs.jsonl")
    assert [any(key.startswith("fit_") for key in record) for record in written] == [False, True, True]
    assert written[1]["fit_complexes"] == written[2]["fit_complexes"] == 2
    out = capsys.readouterr().out
    assert out.count(" | fit top1 ") == 2  # the epoch lines of epochs 2 and 3 only
    assert cli.main(["runs", "report", str(run_dir)]) == 0
    assert cli.main(["runs", "compare", f"a={run_dir}"]) == 0
    captured = capsys.readouterr()
    assert "3 epoch(s)" in captured.out and "Traceback" not in captured.err
