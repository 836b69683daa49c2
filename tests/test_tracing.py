"""Tracing: a no-op by default; with the native library, one trace file per process with our events."""
import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest

from pecan import tracing

ROOT = Path(__file__).resolve().parents[1]


def test_disabled_is_a_no_op(tmp_path):
    assert tracing.setup(False, tmp_path) is False
    assert not tracing.is_enabled()

    @tracing.traced("compute", "forward")
    def double(x):
        return 2 * x

    assert double(3) == 6
    with tracing.span("data", "item"):
        pass
    assert list(tracing.iterate([1, 2], "dataloader", "fetch")) == [1, 2]
    assert not any(tmp_path.iterdir())


def events(trace_dir: Path) -> list[dict]:
    out = []
    for path in trace_dir.glob("*.pfw.gz"):
        with gzip.open(path, "rt") as handle:
            out += [json.loads(line) for line in handle if line.strip().startswith("{")]
    return out


@pytest.mark.multiprocess
def test_training_run_writes_traces(tmp_path):
    if not tracing.native_available():
        pytest.fail("the native dftracer package is part of the test install (.[trace-native])")
    from tests.train.helpers import tiny_run

    path, _ = tiny_run(tmp_path)
    done = subprocess.run([sys.executable, "main_app.py", str(path), "--set", "trace.enabled=true",
                           "--set", "train.epochs=1", "--set", "data.num_workers=1"],
                          cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    trace_dir = tmp_path / "run" / "traces"
    names = {(e.get("cat"), e.get("name")) for e in events(trace_dir)}
    for expected in [("data", "item"), ("dataloader", "fetch"), ("compute", "forward"), ("compute", "backward"),
                     ("compute", "step"), ("pipeline", "epoch"), ("pipeline", "evaluate"),
                     ("checkpoint", "capture")]:
        assert expected in names, expected
    pids = {e["pid"] for e in events(trace_dir) if e.get("cat") == "data"}
    assert len(list(trace_dir.glob("*.pfw.gz"))) >= 2 and pids  # main process + its loader worker(s)


SPAWN_SCRIPT = """
import sys, torch
sys.path.insert(0, {root!r})
from pecan import tracing
from pecan.config import DataConfig
from pecan.data.loader import load_split_frames, make_dataset
from pecan.data.sample import passthrough_collate
if __name__ == "__main__":
    cfg = DataConfig(data_dir={data!r}, train_csvs=["index.csv"], val_fraction=0.0, io_mode="hoist")
    frame, _ = load_split_frames(cfg)
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
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.strip() == "16"
    items = [e for e in events(tmp_path / "traces") if (e.get("cat"), e.get("name")) == ("data", "item")]
    assert len(items) == 16  # every sample read in the spawned worker, flushed at its exit
