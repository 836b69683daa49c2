"""Plot one or more runs from their epochs.jsonl: wall time by phase, samples/s, learning curves, per-rank
phases; prints the summary table of each run.

    python scripts/plot_run.py RUN_DIR [RUN_DIR ...] [--out DIR]

Writes RUN_DIR/plots/run.png (or DIR/<run name>.png with --out). Needs matplotlib: pip install '.[plots]'.
"""
from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path

from pecan import report


def main(argv=None) -> int:
    """Plot each run directory given."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("runs", nargs="+", type=Path, metavar="RUN_DIR")
    parser.add_argument("--out", type=Path, help="write <run name>.png here instead of RUN_DIR/plots")
    args = parser.parse_args(argv)
    try:
        from pecan import plots
    except ImportError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    for run in args.runs:
        epochs = run / "epochs.jsonl"
        if not epochs.exists():
            print(f"error: {run} has no epochs.jsonl (not a PECAN run directory?)", file=sys.stderr)
            return 2
        records = report.read_records(epochs)
        print(f"{run}:\n{report.run_summary(records)}")
        (path,) = plots.write_plots(run, records)
        if args.out:
            args.out.mkdir(parents=True, exist_ok=True)
            path = Path(shutil.copy(path, args.out / f"{run.resolve().name}.png"))
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
