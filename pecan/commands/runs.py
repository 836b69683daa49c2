"""`pecan runs compare|plot|report|trace`: read run directories after (or while) they train.

pecan runs compare A=RUN[,RUN...] B=RUN ... [--strict] [--allow KEY]   figures and every differing setting
pecan runs plot RUN [RUN ...] [--out DIR]                                run.png, or one overlay PNG
pecan runs report RUN                                                    summary, last epoch, CPU share
pecan runs trace RUN [--check] [--perfetto OUT.json]                     phase x rank x epoch from traces
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path


def report_run(run_dir: Path) -> int:
    """Print a run's summary table, its last epoch's full report and any CPU-share warnings."""
    from pecan import report
    from pecan.runs.records import read_run_records
    from pecan.runtime.errors import ConfigError
    from pecan.train.threads import starved_advice

    epochs = run_dir / "epochs.jsonl"
    if not epochs.exists():
        raise ConfigError(f"{run_dir} has no epochs.jsonl (not a PECAN run directory?)")
    records = read_run_records(epochs, need_one=False)
    if not records:
        print(f"{run_dir}: no epoch finished yet")
        return 0
    print(f"{run_dir}: {len(records)} epoch(s)\n{report.run_summary(records)}\n")
    print(report.epoch_line(records[-1]))
    print(report.wall_time_table(records[-1]))
    for record in records:
        advice = starved_advice(record)
        if advice:
            print(f"warning: {advice}")
    return 0


def main(argv=None, prog: str | None = None) -> int:
    """Dispatch to the compare, plot, report or trace action."""
    from pecan.runs import compare, plot

    parser = argparse.ArgumentParser(
        prog=prog, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    compare.add_arguments(actions.add_parser("compare", help="compare runs: figures and every differing setting"))
    plot.add_arguments(actions.add_parser("plot", help="plot one run, or several on the same axes"))
    actions.add_parser("report", help="a run's summary and last epoch report").add_argument("run", type=Path)
    actions.add_parser("trace", help="phase x rank x epoch from a run's traces", add_help=False)
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "trace":  # the trace report keeps its own options
        from pecan.runs.trace import main as trace_main

        return trace_main(argv[1:], prog=f"{prog or 'pecan runs'} trace")
    args = parser.parse_args(argv)
    from pecan.engine.harness import invoke

    if args.action == "compare":
        return invoke(lambda: compare.run(args))
    if args.action == "plot":
        return invoke(lambda: plot.run(args))
    return invoke(lambda: report_run(args.run))  # a damaged or empty record file: named, exit 1
