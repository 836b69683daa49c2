"""Plot runs from their epochs.jsonl and print each run's summary table.

    pecan runs plot RUN_DIR                  # RUN_DIR/plots/run.png
    pecan runs plot RUN_A RUN_B ... [--out DIR]   # one overlay PNG: DIR/overlay.png (default .)

One run: wall time by phase, throughput, learning curves, learning rate, CPU share and per-rank phases
(``--out DIR`` writes DIR/<run name>.png instead). Several runs: one PNG with every run on the same axes.
Needs matplotlib: pip install '.[plots]'.
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

from pecan import report
from pecan.runs import standalone_main
from pecan.runs.records import read_run_records


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The plot options (shared by `pecan runs plot` and scripts/plot_run.py)."""
    parser.add_argument("runs", nargs="+", type=Path, metavar="RUN_DIR")
    parser.add_argument(
        "--out",
        type=Path,
        help="one run: write <run name>.png here instead of RUN_DIR/plots; "
        "several: write overlay.png here (default: the current directory)",
    )


def read_runs(runs: list[Path]) -> dict[str, list[dict]]:
    """{run name: records}; a directory without epochs.jsonl is an error naming it."""
    out = {}
    for run in runs:
        epochs = run / "epochs.jsonl"
        if not epochs.exists():
            raise FileNotFoundError(f"{run} has no epochs.jsonl (not a PECAN run directory?)")
        name = run.resolve().name
        out[name if name not in out else str(run)] = read_run_records(epochs)
    return out


def check_outputs(args: argparse.Namespace) -> None:
    """The PNG written under --out may be no run's epochs.jsonl or plot (ConfigError, exit 2): one run's plot
    copied onto itself (``--out RUN/plots`` for a run named ``run``) would be lost."""
    from pecan.runtime import outputs
    from pecan.runtime.errors import ConfigError

    if not args.out:
        return
    existing = next(path for path in (args.out, *args.out.parents) if path.exists())
    if not existing.is_dir():
        raise ConfigError(
            f"pecan runs plot: --out {args.out} names a directory to write the PNG into, but "
            f"{existing} is a file" + ("" if existing == args.out else " (--out would be created under it)")
        )
    inputs = [(f"the records of {run}", run / "epochs.jsonl") for run in args.runs]
    inputs += [(f"the plot of {run}", run / "plots" / "run.png") for run in args.runs]
    name = "overlay.png" if len(args.runs) > 1 else f"{args.runs[0].resolve().name}.png"
    outputs.check_outputs("pecan runs plot", [("--out", args.out / name)], inputs)


def run(args: argparse.Namespace) -> int:
    """Print the summaries and write the PNG (one run) or the overlay (several)."""
    from pecan.runtime.errors import ConfigError

    try:
        from pecan import plots
    except ImportError as err:
        raise ConfigError(str(err)) from err
    check_outputs(args)
    try:
        runs = read_runs(args.runs)
    except FileNotFoundError as err:  # a run without records is a wrong invocation; a DataError exits 1
        raise ConfigError(str(err)) from err
    for run_dir, records in zip(args.runs, runs.values()):
        print(f"{run_dir}:\n{report.run_summary(records)}")
    if len(args.runs) > 1:
        path = plots.write_overlay(runs, (args.out or Path(".")) / "overlay.png")
    else:
        (path,) = plots.write_plots(args.runs[0], next(iter(runs.values())))
        if args.out:
            args.out.mkdir(parents=True, exist_ok=True)
            path = Path(shutil.copy(path, args.out / f"{args.runs[0].resolve().name}.png"))
    print(f"wrote {path}")
    return 0


def main(argv=None, prog: str | None = None) -> int:
    """Command line of the plots."""
    return standalone_main(__doc__, add_arguments, run, argv, prog)
