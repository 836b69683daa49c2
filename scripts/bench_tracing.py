"""Tracing overhead: the same small training run with tracing off, on, and on with POSIX events, interleaved.

    python scripts/bench_tracing.py --work /tmp/pecan-bench-trace --repeats 2 --out benchmarks/bench_tracing.json

Each variant runs ``main_app.py`` for ``--epochs`` epochs on one rank (HDF5 reopen mode, one loader worker,
so per-sample worker events and POSIX events are included); the figure is the median over repeats of the
mean epoch wall time after the first epoch, from each run's epochs.jsonl.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VARIANTS = {"off": [], "on": ["trace.enabled=true"], "on+posix": ["trace.enabled=true", "trace.posix=true"]}


def main(argv=None) -> int:
    """Run the variants round-robin and write the medians and every repeat."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--complexes", type=int, default=10)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    from tests.train.helpers import tiny_run

    config, _ = tiny_run(args.work, n_complexes=args.complexes, n_poses=10)
    steady: dict[str, list[float]] = {name: [] for name in VARIANTS}
    for repeat in range(args.repeats):
        for name, settings in VARIANTS.items():
            out_dir = args.work / f"{name}-{repeat}"
            command = [sys.executable, "main_app.py", str(config), "--set", f"train.out_dir={out_dir}",
                       "--set", f"train.epochs={args.epochs}", "--set", "data.io_mode=reopen",
                       "--set", "data.num_workers=1", *sum((["--set", s] for s in settings), [])]
            subprocess.run(command, cwd=ROOT, check=True, capture_output=True,
                           env={**os.environ, "PYTHONPATH": str(ROOT)})
            records = [json.loads(line) for line in (out_dir / "epochs.jsonl").read_text().splitlines()]
            steady[name].append(statistics.fmean(r["wall_s"] for r in records[1:]))
            print(name, repeat, f"{steady[name][-1]:.3f}s", flush=True)
    result = {"samples_per_epoch": records[-1]["samples"], "epochs": args.epochs, "repeats": steady,
              "median_epoch_s": {k: statistics.median(v) for k, v in steady.items()}}
    base = result["median_epoch_s"]["off"]
    result["overhead"] = {k: v / base - 1 for k, v in result["median_epoch_s"].items()}
    print(json.dumps(result, indent=1))
    if args.out:
        args.out.write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
