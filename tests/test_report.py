"""pecan.report: per-rank summary, the wall-time and summary tables, provenance; plots; thread sizing; JSON
files hold null, never a bare NaN."""

import importlib.util
import json
import os
from pathlib import Path

import pandas as pd
import pytest

from pecan import report
from pecan.engine import distributed

ROOT = Path(__file__).resolve().parents[1]


def rank_row(scale: float, step: float) -> dict[str, float]:
    phases = {phase: scale * (k + 1) for k, phase in enumerate(report.PHASES)}
    return {**phases, "step_s": step, "worker_busy_s": 0.5, "peak_rss_mb": 100.0, "cuda_peak_mb": 0.0}


def test_rank_summary_mean_max_and_straggler_ratio():
    summary = report.rank_summary([rank_row(1.0, 2.0), rank_row(3.0, 6.0)])
    assert summary["ranks"]["forward_s"] == [3.0, 9.0]  # forward is the third phase
    assert summary["forward_s_mean"] == 6.0 and summary["forward_s_max"] == 9.0
    assert summary["straggler_ratio"] == pytest.approx(6.0 / 4.0)
    assert report.rank_summary([rank_row(1.0, 0.0)])["straggler_ratio"] == 1.0


def record(epoch: int, world: int = 2) -> dict:
    rows = [rank_row(0.1, 1.0), rank_row(0.2, 1.5)][:world]
    return {
        "epoch": epoch,
        "wall_s": 10.0,
        "samples": 100,
        "samples_per_s": 10.0,
        "train_loss": 0.5,
        "val_loss": 0.6,
        "val_auc": 0.7,
        "world_size": world,
        "io_mode": "packed",
        "data_wait_share": 0.01,
        "num_workers": 2,
        "intra_op_threads": 3,
        **{p: 0.1 * (k + 1) for k, p in enumerate(report.PHASES)},
        **report.rank_summary(rows),
    }


def test_wall_time_table_shows_ranks_and_loader():
    table = report.wall_time_table(record(1))
    assert "mean" in table.splitlines()[0] and "max" in table.splitlines()[0]
    assert "straggler ratio 1.20" in table and "2 loader workers/rank" in table and "3 intra-op threads" in table
    assert "grad_comm" in table
    single = report.wall_time_table(record(1, world=1))
    assert "mean" not in single.splitlines()[0]


def test_run_summary_has_a_row_per_epoch():
    lines = report.run_summary([record(1), record(2)]).splitlines()
    assert len(lines) == 4 and lines[2].startswith("| 1 |") and lines[3].startswith("| 2 |")


def test_provenance():
    state = report.git_state(ROOT)
    assert set(state) == {"commit", "dirty"}
    assert "torch" in report.package_versions()


def test_plots_and_plot_run_script(tmp_path, capsys):
    pytest.importorskip("matplotlib", reason="plots need the .[plots] extra")
    run = tmp_path / "run"
    for epoch in (1, 2):
        report.append_record(run / "epochs.jsonl", record(epoch))
    spec = importlib.util.spec_from_file_location("plot_run", ROOT / "scripts" / "plot_run.py")
    plot_run = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(plot_run)
    assert plot_run.main([str(run), "--out", str(tmp_path / "out")]) == 0
    assert (run / "plots" / "run.png").stat().st_size > 10_000
    assert (tmp_path / "out" / "run.png").read_bytes()[:4] == b"\x89PNG"
    assert "| 2 |" in capsys.readouterr().out
    assert plot_run.main([str(tmp_path / "nothing")]) == 2


def test_threads_fit_the_cores(monkeypatch):
    monkeypatch.setattr(distributed, "physical_cores", lambda: 8)
    plan = distributed.plan_threads(2, -1, "reopen", environ={})
    assert (plan.num_workers, plan.intra_op_threads, plan.cores_per_rank, plan.source) == (3, 1, 4, "cores")
    packed = distributed.plan_threads(2, -1, "packed", environ={})
    assert (packed.num_workers, packed.intra_op_threads) == (0, 4)
    assert distributed.plan_threads(1, 2, "hoist", environ={}).intra_op_threads == 6
    assert distributed.plan_threads(1, 20, "hoist", environ={}).intra_op_threads == 1  # never below one
    told = distributed.plan_threads(1, 2, "hoist", environ={"OMP_NUM_THREADS": "5"})
    assert told.source == "env" and told.num_workers == 2


def test_size_threads_applies_each_source(monkeypatch):
    """The plan is applied: sized to the cores or set in the config, torch gets that many threads; from the
    environment, torch keeps the count OpenMP took from it."""
    from types import SimpleNamespace

    import torch

    from pecan.train.threads import size_threads

    monkeypatch.setattr(distributed, "physical_cores", lambda: 3)
    for name in distributed.THREAD_ENV:
        monkeypatch.delenv(name, raising=False)
    config = SimpleNamespace(
        data=SimpleNamespace(num_workers=0, io_mode="packed"), train=SimpleNamespace(deterministic=False)
    )
    monkeypatch.setattr(os, "getloadavg", lambda: (0.0, 0.0, 0.0))  # an idle node (tests/train/test_threads.py)
    monkeypatch.setattr(os, "cpu_count", lambda: 3)
    env = SimpleNamespace(local_world_size=1, is_main=True)
    before = torch.get_num_threads()
    try:
        config.train.intra_op_threads = 0
        plan = size_threads(config, env)
        assert (plan.source, plan.intra_op_threads, torch.get_num_threads()) == ("cores", 3, 3)
        config.train.intra_op_threads = 2
        plan = size_threads(config, env)
        assert (plan.source, plan.intra_op_threads, torch.get_num_threads()) == ("config", 2, 2)
        config.train.intra_op_threads = 0
        torch.set_num_threads(1)
        monkeypatch.setenv("OMP_NUM_THREADS", "1")
        plan = size_threads(config, env)
        assert (plan.source, plan.intra_op_threads, torch.get_num_threads()) == ("env", 1, 1)
    finally:
        torch.set_num_threads(before)


def test_cpu_share_per_rank_and_the_starved_warning():
    rows = [{**rank_row(0.1, 1.0), "cpu_share": 0.9}, {**rank_row(0.1, 1.0), "cpu_share": 0.4}]
    summary = report.rank_summary(rows)
    assert (summary["cpu_share"], summary["cpu_share_min"], summary["cpu_share_min_rank"]) == (0.9, 0.4, 1)
    starved = {**record(3), **summary, "intra_op_threads": 4}
    assert "CPU share 40% on rank 1" in report.epoch_line(starved)
    from pecan.train.threads import starved_advice

    assert "rank 1 got 40%" in starved_advice(starved) and "OMP_NUM_THREADS=1" in starved_advice(starved)
    assert starved_advice({**starved, "cpu_share_min": 0.7}) is None
    # One thread: only long epochs are judged (a short one's checkpoint fsync alone can take a third of it).
    assert starved_advice({**starved, "intra_op_threads": 1, "wall_s": 10.0}) is None
    assert "whole cores" in starved_advice({**starved, "intra_op_threads": 1, "wall_s": 40.0})


def test_compact_line_has_the_shares_that_matter_and_the_eta():
    one = {
        **record(2, world=1),
        "wall_s": 10.0,
        "data_wait_s": 1.0,
        "forward_s": 2.0,
        "backward_s": 3.0,
        "optimizer_s": 1.0,
        "eval_s": 2.0,
        "checkpoint_s": 0.5,
    }
    line = report.compact_line(one, 5, 30.0)
    assert line.startswith("epoch   2/5 | 10.0s | loss 0.5000 | val_loss 0.6000 | val_auc 0.7000 | 10.0 samples/s")
    assert "data 10% compute 60% eval 20% ckpt 5% | ETA 0:00:30" in line and "comm" not in line
    assert "comm " in report.compact_line({**one, "world_size": 2}, 5, 30.0)


def test_single_rank_summary_omits_rank_columns():
    assert "straggler" not in report.run_summary([record(1, world=1)])
    assert "straggler" in report.run_summary([record(1, world=2)])


@pytest.mark.slow
def test_overlay_of_two_runs_is_one_png_and_64_ranks_draw_a_heat_map(tmp_path, capsys):
    pytest.importorskip("matplotlib", reason="plots need the .[plots] extra")
    from pecan import plots
    from pecan.runs import plot

    runs = [tmp_path / "a", tmp_path / "b"]
    for run in runs:
        for epoch in (1, 2, 3):
            report.append_record(run / "epochs.jsonl", {**record(epoch), "lr": 0.001 / epoch})
    assert plot.main([str(r) for r in runs] + ["--out", str(tmp_path / "out")]) == 0
    assert (tmp_path / "out" / "overlay.png").read_bytes()[:4] == b"\x89PNG"
    assert not any((run / "plots").exists() for run in runs)  # one overlay, not a PNG per run
    many = {**record(1), **report.rank_summary([rank_row(0.1 + k / 100, 1.0 + k / 50) for k in range(64)])}
    figure = plots._pyplot().figure()
    plots.plot_ranks(figure.gca(), many)
    assert figure.gca().images and figure.gca().get_ylabel() == "rank"  # a heat map, not 64 bars per phase
    (path,) = plots.write_plots(tmp_path / "wide", [many])
    assert path.stat().st_size > 10_000


def test_cpu_share_not_measured_is_left_out():
    summary = report.rank_summary([{**rank_row(0.1, 1.0), "cpu_share": float("nan")}] * 2)
    assert "cpu_share" not in summary["ranks"] and "cpu_share_min" not in summary
    assert report.cpu_note({**record(1), **summary}) == ""


def test_epoch_axes_have_integer_ticks_and_legends_outside():
    pytest.importorskip("matplotlib", reason="plots need the .[plots] extra")
    from pecan import plots

    records = [{**record(epoch), "lr": 0.001} for epoch in (1, 2)]
    figure = plots._pyplot().figure()
    ax = figure.gca()
    plots.plot_wall_time(ax, records)
    figure.canvas.draw()
    ticks = [t for t in ax.get_xticks() if 0.5 <= t <= 2.5]
    assert ticks == [1.0, 2.0]  # not 1.0, 1.25, 1.5, ... on a short run
    box = ax.get_legend().get_window_extent()
    assert box.x0 >= ax.get_window_extent().x1  # the legend sits right of the data, not over it


def strict_json(text: str):
    def refuse(constant):
        raise ValueError(f"bare {constant} is not JSON")

    return json.loads(text, parse_constant=refuse)


def test_files_written_as_json_hold_null_never_bare_nan(tmp_path):
    import numpy as np

    from pecan import report
    from pecan.engine.state import CheckpointState
    from pecan.scoring import shards as predict

    record = {"epoch": 1, "val_auc": float("nan"), "per_rank": [1.0, float("inf"), np.float32("nan")]}
    report.append_record(tmp_path / "epochs.jsonl", record)
    assert strict_json((tmp_path / "epochs.jsonl").read_text()) == {
        "epoch": 1,
        "val_auc": None,
        "per_rank": [1.0, None, None],
    }
    scores = pd.DataFrame({c: [0] for c in predict.SCORE_COLUMNS})
    values = {"complexes": 1, "auc": float("nan"), "splits": {"test": {"complexes": 1, "auc": float("nan")}}}
    out = tmp_path / "scores.csv"
    try:
        predict.write_outputs(scores, values, out, CheckpointState(model={}, complexes={}))
    except (KeyError, TypeError):
        pass  # the summary lines want more figures; the metrics JSON is written before them
    assert strict_json(predict.metrics_path(out).read_text())["auc"] is None
