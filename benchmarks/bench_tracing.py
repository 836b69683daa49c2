"""Tracing overhead: the same small training run with tracing off, on, and on with POSIX events, interleaved.

    python -m benchmarks.bench_tracing --work /tmp/pecan-bench-trace --repeats 2 --out benchmarks/bench_tracing.json

Each variant runs ``main_app.py`` for ``--epochs`` epochs on one rank with one loader worker, in each of
``--io-modes`` (default: HDF5 ``reopen``, where every sample records its own worker events and POSIX events
are possible, and ``packed``, the production path, with events per batch); the figure is the median over
repeats of the mean epoch wall time after the first epoch, from each run's epochs.jsonl. Variants and
modes are interleaved within each repeat. On short epochs run-to-run scatter (about 10%) hides a 1% effect,
so the run level also reports an accounting: the events the traced runs wrote per epoch (from their trace files)
times the measured cost of one event, as a share of the untraced epoch.

    python -m benchmarks.bench_tracing --work /tmp/pecan-bench-trace --inprocess \
        --out benchmarks/bench_tracing_inprocess.json

measures inside one process instead (less exposed to a noisy machine): the per-sample cost of a loader
worker's batch (HDF5 reopen mode: data/item, h5_read, graph build, collate and batch events) with tracing
switched on and off between interleaved passes (the order alternating), and the cost of one empty event.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VARIANTS = {"off": [], "on": ["trace.enabled=true"], "on+posix": ["trace.enabled=true", "trace.posix=true"]}


def event_cost_us(count: int = 5000) -> float:
    """Microseconds per empty event with three context arguments (tracing must be set up)."""
    from pecan.runtime import tracing

    tracing.set_context(epoch=1, step=1)
    start = time.perf_counter()
    for _ in range(count):
        with tracing.span("compute", "forward", size=4):
            pass
    return (time.perf_counter() - start) / count * 1e6


def events_in(trace_dir: Path) -> int:
    """PECAN's events (not dftracer's own metadata or POSIX events) in a run's trace files."""
    import gzip

    total = 0
    for path in trace_dir.glob("*.pfw.gz"):
        with gzip.open(path, "rt") as handle:
            for line in handle:
                line = line.strip().rstrip(",")
                if (
                    line.startswith("{")
                    and '"ph":1' in line
                    and '"cat":"dftracer"' not in line
                    and '"cat":"POSIX"' not in line
                    and '"cat":"STDIO"' not in line
                ):
                    total += 1
    return total


def account(run_dir: Path) -> dict:
    """Events per epoch of a traced run x the cost of one event, as a share of its median epoch."""
    from pecan.runtime import tracing

    walls = [json.loads(line)["wall_s"] for line in (run_dir / "epochs.jsonl").read_text().splitlines()]
    tracing.setup(True, tempfile.mkdtemp(prefix="pecan-bench-trace-"), 0)
    event_us = statistics.median(event_cost_us() for _ in range(5))
    tracing.finalize()
    per_epoch = events_in(run_dir / "traces") / len(walls)
    return {
        "events_per_epoch": per_epoch,
        "event_us": event_us,
        "epoch_s": walls,
        "share_of_epoch": per_epoch * event_us * 1e-6 / statistics.median(walls),
    }


def in_process(work: Path, repeats: int) -> dict:
    """Interleaved passes over the data set's batches with events on and off; the cost of one event."""
    from pecan.config import DataConfig
    from pecan.data.loader import load_split_indexes, make_dataset
    from pecan.data.sample import COUNTER_FIELDS
    from pecan.runtime import tracing

    cfg = DataConfig(data_dir=str(work / "data"), train_csvs=["index.csv"], val_fraction=0.0, io_mode="reopen")
    dataset = tracing.BusyDataset(
        make_dataset(cfg, load_split_indexes(cfg)[0], augment=False), COUNTER_FIELDS.index("worker_busy_ns")
    )
    tracing.setup(True, tempfile.mkdtemp(prefix="pecan-bench-trace-"), 0)
    tracing.set_context(epoch=1, step=1)
    indices = list(range(len(dataset)))
    batches = [indices[k : k + 4] for k in range(0, len(indices), 4)]
    per_sample: dict[str, list[float]] = {"off": [], "on": []}
    for repeat in range(repeats):
        for name in ("off", "on") if repeat % 2 == 0 else ("on", "off"):  # ABBA: no order advantage
            tracing.set_recording(name == "on")
            start = time.perf_counter()
            for batch in batches:
                dataset.__getitems__(batch)
            per_sample[name].append((time.perf_counter() - start) / len(indices) * 1e3)
    tracing.set_recording(True)
    event_us = event_cost_us()
    tracing.finalize()
    median = {k: statistics.median(v) for k, v in per_sample.items()}
    return {
        "samples": len(indices),
        "per_sample_ms_repeats": per_sample,
        "per_sample_ms_median": median,
        "per_sample_overhead": median["on"] / median["off"] - 1,
        "event_us": event_us,
    }


def main(argv=None) -> int:
    """Run the variants round-robin and write the medians and every repeat."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--complexes", type=int, default=10)
    parser.add_argument("--io-modes", nargs="+", default=["reopen", "packed"])
    parser.add_argument("--out", type=Path)
    parser.add_argument("--inprocess", action="store_true", help="the in-process measurement instead")
    parser.add_argument(
        "--account",
        type=Path,
        metavar="RUN_DIR",
        help="only the accounting of an existing traced run (its traces/ and epochs.jsonl)",
    )
    args = parser.parse_args(argv)
    if args.account:
        result = account(args.account)
        print(json.dumps(result, indent=1))
        return 0
    from tests.train.helpers import tiny_run

    config, _ = tiny_run(args.work, n_complexes=args.complexes, n_poses=10)
    if args.inprocess:
        result = in_process(args.work, max(args.repeats, 5))
        print(json.dumps(result, indent=1))
        if args.out:
            args.out.write_text(json.dumps(result, indent=1) + "\n")
        return 0
    steady = {mode: {name: [] for name in VARIANTS} for mode in args.io_modes}
    samples = 0
    for repeat in range(args.repeats):
        for mode in args.io_modes:
            for name, settings in VARIANTS.items():
                out_dir = args.work / f"{mode}-{name}-{repeat}"
                command = [
                    sys.executable,
                    "main_app.py",
                    str(config),
                    "--set",
                    f"train.out_dir={out_dir}",
                    "--set",
                    f"train.epochs={args.epochs}",
                    "--set",
                    f"data.io_mode={mode}",
                    "--set",
                    "data.num_workers=1",
                    *sum((["--set", s] for s in settings), []),
                ]
                subprocess.run(
                    command, cwd=ROOT, check=True, capture_output=True, env={**os.environ, "PYTHONPATH": str(ROOT)}
                )
                records = [json.loads(line) for line in (out_dir / "epochs.jsonl").read_text().splitlines()]
                steady[mode][name].append(statistics.fmean(r["wall_s"] for r in records[1:]))
                samples = records[-1]["samples"]
                print(mode, name, repeat, f"{steady[mode][name][-1]:.3f}s", flush=True)
    result = {
        "samples_per_epoch": samples,
        "epochs": args.epochs,
        "repeats": steady,
        "median_epoch_s": {},
        "overhead": {},
        "accounting": {},
    }
    from pecan.runtime import tracing

    tracing.setup(True, tempfile.mkdtemp(prefix="pecan-bench-trace-"), 0)
    event_us = statistics.median(event_cost_us() for _ in range(5))
    tracing.finalize()
    for mode in args.io_modes:
        medians = {k: statistics.median(v) for k, v in steady[mode].items()}
        result["median_epoch_s"][mode] = medians
        result["overhead"][mode] = {k: v / medians["off"] - 1 for k, v in medians.items()}
        # Accounting: the events a traced run wrote per epoch times the cost of one, against the epoch.
        per_epoch = statistics.median(
            events_in(args.work / f"{mode}-on-{r}" / "traces") / args.epochs for r in range(args.repeats)
        )
        result["accounting"][mode] = {
            "events_per_epoch": per_epoch,
            "event_us": event_us,
            "share_of_epoch": per_epoch * event_us * 1e-6 / medians["off"],
        }
    print(json.dumps(result, indent=1))
    if args.out:
        args.out.write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
