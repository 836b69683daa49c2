"""Tracing: a no-op by default; with the native library, one trace file per process with our events."""

import gzip
import json
import sys
from collections import Counter
from pathlib import Path

import pytest

from pecan import report
from pecan.runtime import tracing
from tests.ddp import run_ranks_ok
from tests.procs import ROOT, app_argv, clean_env, run_checked
from tests.train.helpers import tiny_run


@pytest.fixture
def native_tracer():
    """The native dftracer must be there: it is part of the test install, so its absence fails, not skips."""
    if not tracing.native_available():
        pytest.fail("the native dftracer package is part of the test install (.[trace-native])")


def test_disabled_is_a_no_op(tmp_path):
    assert tracing.setup(False, tmp_path) is False
    assert not tracing.is_enabled()

    @tracing.traced("compute", "forward")
    def double(x):
        return 2 * x

    assert double(3) == 6
    with tracing.span("data", "item"):
        pass
    assert not any(tmp_path.iterdir())


def events(trace_dir: Path) -> list[dict]:
    out = []
    for path in trace_dir.glob("*.pfw.gz"):
        with gzip.open(path, "rt") as handle:
            out += [json.loads(line.strip().rstrip(",")) for line in handle if line.strip().startswith("{")]
    return out


def counts(events_: list[dict]) -> Counter:
    return Counter((e.get("cat"), e.get("name")) for e in events_)


def test_ai_categories_match_the_installed_dftracer(native_tracer):
    from dftracer.python.ai_common import CommunicationEvent, ProfileCategory

    assert set(tracing.AI_CATEGORIES) <= {str(c) for c in ProfileCategory}
    assert {"all_reduce", "all_gather", "bcast", "barrier"} <= {str(e) for e in CommunicationEvent}


def test_bad_tracer_environment_is_warned_and_dropped(caplog):
    environ = {
        "DFTRACER_DATA_DIR": "  ",
        "DFTRACER_ENABLE": "yes",
        "DFTRACER_INIT": "function",
        "DFTRACER_LOG_LEVEL": "loud",
        "DFTRACER_INC_METADATA": "1",
        "OTHER": "",
    }
    with caplog.at_level("WARNING"):
        dropped = tracing.clean_environment(environ)
    assert sorted(dropped) == ["DFTRACER_DATA_DIR", "DFTRACER_ENABLE", "DFTRACER_LOG_LEVEL"]
    assert environ == {"DFTRACER_INIT": "function", "DFTRACER_INC_METADATA": "1", "OTHER": ""}
    assert "DFTRACER_DATA_DIR is empty" in caplog.text and "'loud'" in caplog.text


def test_requested_but_unavailable_is_recorded(tmp_path, monkeypatch):
    monkeypatch.setattr(tracing, "native_available", lambda: False)
    monkeypatch.setitem(tracing._state, "requested", False)
    assert tracing.setup(True, tmp_path) is False
    assert tracing.status()["requested"] and tracing.status()["available"] is False
    assert not tracing.status()["active"] and not any(tmp_path.iterdir())


@pytest.mark.multiprocess
@pytest.mark.slow
def test_packed_run_writes_traces(tmp_path, native_tracer):
    path, _ = tiny_run(tmp_path)
    settings = ["trace.enabled=true", "train.epochs=1", "data.io_mode=packed", "data.num_workers=1"]
    command = app_argv(path, *settings, "train.tensorboard=true")
    done = run_checked(command, env=clean_env(DFTRACER_DATA_DIR=""))
    assert "DFTRACER_DATA_DIR is empty; ignored" in done.stderr
    trace_dir = tmp_path / "run" / "traces"
    names = counts(events(trace_dir))
    for expected in [
        ("pecan.setup", "packs"),
        ("pecan.io", "pack_gather"),
        ("pecan.data", "collate"),
        ("pecan.data", "batch"),
        ("pecan.loader", "handover"),
        ("dataloader", "fetch"),
        ("compute", "forward"),
        ("compute", "backward"),
        ("compute", "step"),
        ("pipeline", "epoch"),
        ("pipeline", "evaluate"),
        ("checkpoint", "capture"),
    ]:
        assert names[expected] > 0, expected
    assert names[("data", "item")] == 0  # packed data has no per-sample step; its batch is pack_gather
    assert names[("pecan.io", "pack_gather")] == names[("pecan.data", "batch")]
    assert len(list(trace_dir.glob("*.pfw.gz"))) >= 2  # main process + its loader worker
    run = report.read_records(tmp_path / "run" / "runs.jsonl")[-1]
    assert run["tracing"]["active"] and run["tracing"]["ignored_env"] == ["DFTRACER_DATA_DIR"]
    assert list((tmp_path / "run" / "tensorboard").glob("events.out.tfevents.*"))
    assert not (tmp_path / "run" / "plots").exists()


SPAWN_SCRIPT = """
import sys, torch
sys.path.insert(0, {root!r})
from pecan.runtime import tracing
from pecan.config import DataConfig
from pecan.data.loader import load_split_indexes, make_dataset
from pecan.data.sample import passthrough_collate
if __name__ == "__main__":
    cfg = DataConfig(data_dir={data!r}, train_csvs=["index.csv"], val_fraction=0.0, io_mode="hoist")
    frame, _ = load_split_indexes(cfg)
    loader = torch.utils.data.DataLoader(make_dataset(cfg, frame), batch_size=4, num_workers=1,
                                         multiprocessing_context="spawn", collate_fn=passthrough_collate,
                                         worker_init_fn=tracing.WorkerInit({trace!r}, 0))
    print(sum(batch.num_graphs for batch in loader))
"""


@pytest.mark.multiprocess
def test_spawned_worker_writes_its_own_trace(tiny_dataset, tmp_path):
    data_dir, _, _ = tiny_dataset
    script = tmp_path / "spawn_trace.py"
    script.write_text(SPAWN_SCRIPT.format(root=str(ROOT), data=str(data_dir), trace=str(tmp_path / "traces")))
    done = run_checked([sys.executable, str(script)])
    assert done.stdout.strip() == "16"
    items = [e for e in events(tmp_path / "traces") if (e.get("cat"), e.get("name")) == ("data", "item")]
    assert len(items) == 16  # every sample read in the spawned worker, flushed at its exit


EVENT_SCRIPT = """
import sys
sys.path.insert(0, {root!r})
from pecan.runtime import tracing
assert tracing.setup(True, {trace!r}, rank=3)
tracing.set_context(epoch=2, step=7)
with tracing.span("compute", "forward", size=4, scale=0.5, what="x") as event:
    with tracing.span("pecan.io", "h5_read"):
        pass
    event.update({{"atoms": 12}})
start = tracing.now()
tracing.log_span("comm", "all_reduce", start, 25, bytes=1024)
tracing.finalize()
with tracing.span("compute", "after", size=1):
    pass
"""


@pytest.mark.slow
def test_event_arguments_keep_their_types_and_nesting(tmp_path):
    from dftracer.python.common import TagType

    assert tracing._KEY == int(TagType.KEY)
    script = tmp_path / "events.py"
    script.write_text(EVENT_SCRIPT.format(root=str(ROOT), trace=str(tmp_path / "traces")))
    run_checked([sys.executable, str(script)], timeout=120)
    found = {
        (e["cat"], e["name"]): e
        for e in events(tmp_path / "traces")
        if not e["cat"].isupper() and e["cat"] != "dftracer"
    }
    assert set(found) == {("compute", "forward"), ("pecan.io", "h5_read"), ("comm", "all_reduce")}
    forward = found[("compute", "forward")]["args"]
    assert (forward["rank"], forward["epoch"], forward["step"], forward["size"], forward["atoms"]) == (3, 2, 7, 4, 12)
    assert forward["scale"] == 0.5 and forward["what"] == "x"
    inner, outer = found[("pecan.io", "h5_read")], found[("compute", "forward")]
    assert outer["ts"] <= inner["ts"] and inner["ts"] + inner["dur"] <= outer["ts"] + outer["dur"]
    reduce = found[("comm", "all_reduce")]
    assert reduce["dur"] == 25 and reduce["args"]["bytes"] == 1024 and reduce["args"]["step"] == 7


RECORDING_SCRIPT = """
import sys
sys.path.insert(0, {root!r})
from pecan.runtime import tracing
tracing.set_recording(True)
assert not tracing.is_enabled()  # no tracer set up: switching recording on does not make one
assert tracing.setup(True, {trace!r})
for name, on in (("first", True), ("paused", False), ("again", True)):
    tracing.set_recording(on)
    assert tracing.is_enabled() is on
    for _ in range(20):  # several events a phase: a trace of one or two events was left unwritten by dftracer
        with tracing.span("compute", name):
            pass
tracing.finalize()
"""


@pytest.mark.slow
def test_recording_switched_off_and_on_records_only_the_spans_while_on(tmp_path, native_tracer):
    script = tmp_path / "recording.py"
    script.write_text(RECORDING_SCRIPT.format(root=str(ROOT), trace=str(tmp_path / "traces")))
    run_checked([sys.executable, str(script)], timeout=120)
    names = {e["name"] for e in events(tmp_path / "traces") if e["cat"] == "compute"}
    assert names == {"first", "again"}


def load_script(name: str):
    import importlib.util

    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


MAIN_SPANS = [
    ("pipeline", "epoch"),
    ("pipeline", "train"),
    ("pipeline", "evaluate"),
    ("checkpoint", "capture"),
    ("dataloader", "fetch"),
    ("pecan.loader", "handover"),
    ("device", "transfer"),
    ("compute", "forward"),
    ("compute", "backward"),
    ("compute", "step"),
    ("pecan.eval", "eval_forward"),
    ("device", "eval_transfer"),
    ("comm", "all_gather"),
    ("comm", "barrier"),
]
SETUP_SPANS = [("pecan.setup", "index"), ("pecan.setup", "model"), ("checkpoint", "restart"), ("comm", "bcast")]
WORKER_SPANS = [
    ("data", "item"),
    ("pecan.io", "h5_read"),
    ("pecan.graph", "build"),
    ("pecan.data", "collate"),
    ("pecan.data", "batch"),
    ("POSIX", "pread64"),
]


@pytest.mark.multiprocess
@pytest.mark.slow
def test_two_rank_traced_run_covers_every_phase(tmp_path, native_tracer):
    """2 gloo ranks (tests/ddp.py), HDF5 reopen mode, one loader worker each, POSIX tracing of the data dir."""
    path, _ = tiny_run(tmp_path)
    settings = ["trace.enabled=true", "trace.posix=true", "data.io_mode=reopen", "data.num_workers=1"]
    output = run_ranks_ok(app_argv(path, *settings, "train.plots=true"), timeout=400)
    run_dir = tmp_path / "run"
    records = report.read_records(run_dir / "epochs.jsonl")
    assert [r["epoch"] for r in records] == [1, 2] and records[-1]["completed"] and not records[0]["completed"]
    trace_report = load_script("trace_report")
    events_by_rank = {0: [], 1: []}
    for file in trace_report.trace_files(run_dir):
        for event in trace_report.read_events(file):
            events_by_rank[event["rank"]].append(event)
    for rank, rank_events in events_by_rank.items():
        steps = -(-records[0]["samples"] // 2 // 4)  # this rank's batches of 4 per epoch
        for epoch in (1, 2):
            per_epoch = counts([e for e in rank_events if e["args"].get("epoch") == epoch])
            for name in MAIN_SPANS:
                assert per_epoch[name] > 0, (rank, epoch, name)
            for name in [("dataloader", "fetch"), ("compute", "forward"), ("compute", "backward"), ("compute", "step")]:
                assert per_epoch[name] == steps, (rank, epoch, name, per_epoch[name])
            grads = [e for e in rank_events if e["args"].get("epoch") == epoch and e["args"].get("what") == "gradients"]
            assert len(grads) == steps and all(e["name"] == "all_reduce" for e in grads)
            assert per_epoch[("pipeline", "epoch")] == 1 and per_epoch[("checkpoint", "capture")] == 1
        every = counts(rank_events)
        for name in SETUP_SPANS:
            assert every[name] >= 1, (rank, name)
        index_broadcasts = [e for e in rank_events if e["name"] == "bcast" and e["args"].get("what") == "index"]
        assert len(index_broadcasts) == 1, rank
        for name in WORKER_SPANS:
            assert every[name] > 0, (rank, name)
        assert every[("data", "item")] == every[("pecan.io", "h5_read")] == every[("pecan.graph", "build")]
        assert all(e["args"].get("step") is not None for e in rank_events if e["cat"] == "compute")
    # trace totals agree with the per-rank phases of epochs.jsonl
    totals = trace_report.phase_totals(trace_report.load(run_dir))
    assert trace_report.check_against_records(totals, run_dir) == []
    for record in records:
        for rank in (0, 1):
            traced = sum(totals[(record["epoch"], rank)].values())
            reported = sum(record["ranks"][phase][rank] for phase in report.PHASES)
            assert traced == pytest.approx(reported, rel=0.02)
    # per-rank report fields
    for record in records:
        for field in report.REQUIRED_FIELDS:
            assert field in record, field
        assert all(len(record["ranks"][name]) == 2 for name in report.RANK_FIGURES)
        assert record["straggler_ratio"] >= 1.0 and record["grad_comm_s_max"] >= record["grad_comm_s_mean"] > 0
        assert min(record["ranks"]["worker_busy_s"]) > 0 and min(record["ranks"]["peak_rss_mb"]) > 0
        assert record["num_workers"] == 1 and record["intra_op_threads"] == 1
    run = report.read_records(run_dir / "runs.jsonl")[-1]
    assert run["tracing"]["active"] and run["tracing"]["posix_data_dir"] == str((tmp_path / "data").resolve())
    assert run["intra_op_threads"] == 1 and run["threads_from"] == "env"
    # Perfetto conversion: valid Chrome JSON with string phases
    out = tmp_path / "perfetto.json"
    assert trace_report.main([str(run_dir), "--perfetto", str(out), "--check"]) == 0
    chrome = json.loads(out.read_text())
    assert chrome["traceEvents"] and all(isinstance(e["ph"], str) for e in chrome["traceEvents"])
    assert {e["ph"] for e in chrome["traceEvents"]} == {"X", "M"}
    assert all(isinstance(e["ts"], (int, float)) and e["dur"] >= 0 for e in chrome["traceEvents"] if e["ph"] == "X")
    # end-of-run plots and summary
    assert (run_dir / "plots" / "run.png").stat().st_size > 10_000
    assert "| epoch | wall s |" in output
