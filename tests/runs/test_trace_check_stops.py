"""`pecan runs trace --check` on hand-written trace files of a run stopped inside epoch 1 and resumed: the
stop marker (as training writes it) is no epoch, each rank's split epoch is compared with the process that
finished it, and a record that disagrees with that part still fails. Fast and without dftracer; the real run
is tests/runs/test_trace_check_resumed.py."""

from __future__ import annotations

import json

from pecan import cli
from pecan.runs import trace
from pecan.train.lifecycle import stop_record


def event(epoch: int, rank: int, name: str, ts: float, dur: float) -> str:
    """One complete compute event of a trace file (dftracer's JSON lines; times in microseconds)."""
    return json.dumps({"cat": "compute", "name": name, "ts": ts, "dur": dur, "args": {"epoch": epoch, "rank": rank}})


def write_trace(path, lines: list[str]) -> None:
    path.write_text("[\n" + "".join(line + ",\n" for line in lines) + "]\n")


def stopped_run(tmp_path, forward_epoch_1: list[float]):
    """Two ranks; the first process trains 3 s of epoch 1 per rank and stops, the second trains the rest of
    epoch 1 (2 s, 2.5 s) and epoch 2 (4 s); epochs.jsonl records ``forward_epoch_1`` per rank for epoch 1."""
    run_dir, traces = tmp_path / "run", tmp_path / "run" / "traces"
    traces.mkdir(parents=True)
    for rank, (rest, later) in enumerate([(2.0, 4.0), (2.5, 4.0)]):
        write_trace(traces / f"a-pecan-rank{rank}-100.pfw", [event(1, rank, "forward", 1e6, 3e6)])
        second = [event(1, rank, "forward", 9e6, rest * 1e6), event(2, rank, "forward", 20e6, later * 1e6)]
        write_trace(traces / f"b-pecan-rank{rank}-200.pfw", second)
    records = [
        stop_record(1, 3, 8, "SIGTERM"),
        {"epoch": 1, "world_size": 2, "ranks": {"forward_s": forward_epoch_1}},
        {"epoch": 2, "world_size": 2, "ranks": {"forward_s": [4.0, 4.0]}},
    ]
    (run_dir / "epochs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    return run_dir


def test_a_stopped_and_resumed_epoch_agrees_with_its_record(tmp_path, capsys):
    run_dir = stopped_run(tmp_path, [2.0, 2.5])
    assert cli.main(["runs", "trace", str(run_dir), "--check"]) == 0, capsys.readouterr().out
    assert "trace totals agree with epochs.jsonl" in capsys.readouterr().out


def test_a_real_disagreement_in_the_resumed_epoch_still_fails(tmp_path, capsys):
    run_dir = stopped_run(tmp_path, [2.0, 3.5])
    assert cli.main(["runs", "trace", str(run_dir), "--check"]) == 1
    out = capsys.readouterr().out
    assert "epoch 1 rank 1 forward_s: trace 2.5000s, epochs.jsonl 3.5000s" in out and "1 disagreement" in out


def test_the_stop_marker_says_whether_its_epoch_goes_on_in_a_later_process():
    within, after = stop_record(1, 3, 8, "SIGTERM"), stop_record(1, 8, 8, "SIGTERM", after_epoch=True)
    assert within["resumes"] == "mid_epoch" and after["resumes"] == "next_epoch"
    assert trace.split_by_stop(within) and not trace.split_by_stop(after)
    # Markers written before the field: the message says which.
    assert trace.split_by_stop({"message": within["message"]})
    assert not trace.split_by_stop({"message": after["message"]})
