"""Compare runs (and their replicates) from their epochs.jsonl: same scale, completed, replicates' mean/stdev/CV.

    python scripts/compare_runs.py baseline=runs/reopen-1,runs/reopen-2 packed=runs/packed-1,runs/packed-2

Each argument is NAME=RUN_DIR[,RUN_DIR...]: one group of replicates. Per run, epochs after the first
``--skip`` (warm-up) are averaged; per group, the replicate mean, stdev and CV are shown, and throughput is
compared with the first group; a second table splits the epoch into its phases (rank 0, seconds). Before
crediting a speed-up it checks that the groups ran at the same scale (world size, samples per epoch), that
every run completed its configured epochs, and that the settings that move timings (intra-op threads,
loader workers, io_mode, amp, tracing, world size) match; differences are warnings, or an error with
``--strict``. Steady state is epochs after the first (``--skip 1``); a run with only one epoch is reported
with its warm-up included, and the warnings say so.
"""
from __future__ import annotations

import argparse
import math
import statistics
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from pecan.report import PHASES, read_records  # noqa: E402

FIGURES = ("samples_per_s", "wall_s", "data_wait_share", "file_opens_per_sample", "h5_calls_per_sample", *PHASES)
NORMALISED = ("file_opens_per_sample", "h5_calls_per_sample")
# Settings that change timings; runs compared for speed should agree on them.
SETTINGS = ("intra_op_threads", "num_workers", "io_mode", "amp", "tracing", "world_size")


def run_settings(run_dir: Path, records: list[dict], config: dict) -> dict:
    """The timing-relevant settings of a run, from its last epoch record, runs.jsonl and config.yaml."""
    runs = read_records(run_dir / "runs.jsonl") if (run_dir / "runs.jsonl").exists() else [{}]
    last, started = records[-1], runs[-1]
    tracing = last.get("tracing", (started.get("tracing") or {}).get("active",
                                                                      (config.get("trace") or {}).get("enabled")))
    return {"intra_op_threads": last.get("intra_op_threads", started.get("intra_op_threads")),
            "num_workers": last.get("num_workers", started.get("num_workers")),
            "io_mode": last.get("io_mode"), "amp": last.get("amp", (config.get("train") or {}).get("amp")),
            "tracing": tracing, "world_size": last.get("world_size")}


def run_summary(run_dir: Path, skip: int) -> dict:
    """Steady-state means of one run, plus what is needed to judge comparability."""
    records = read_records(run_dir / "epochs.jsonl")
    config = yaml.safe_load((run_dir / "config.yaml").read_text())
    configured = config["train"]["epochs"]
    steady = records[skip:] or records
    summary = {f: statistics.fmean([r[f] for r in steady if r.get(f) is not None] or [0.0]) for f in FIGURES}
    summary.update(run=str(run_dir), epochs=len(records), configured_epochs=configured,
                   warm_up_included=len(records) <= skip, settings=run_settings(run_dir, records, config),
                   complete=len(records) >= configured, world_size=records[-1]["world_size"],
                   samples=records[-1]["samples"], io_mode=records[-1].get("io_mode"))
    return summary


def spread(values: list[float]) -> tuple[float, float, float]:
    """Mean, sample stdev (0 for one replicate) and coefficient of variation."""
    mean = statistics.fmean(values)
    stdev = statistics.stdev(values) if len(values) > 1 else 0.0
    return mean, stdev, (stdev / mean if mean else math.nan)


def compare(groups: dict[str, list[Path]], skip: int = 1, vary: tuple[str, ...] = ("io_mode",)) -> tuple[str, list[str]]:
    """The comparison table and the list of warnings."""
    runs = {name: [run_summary(d, skip) for d in dirs] for name, dirs in groups.items()}
    warnings = []
    for name, summaries in runs.items():
        for s in summaries:
            if not s["complete"]:
                warnings.append(f"{s['run']} ({name}) stopped after {s['epochs']} of {s['configured_epochs']} epochs")
            if s["warm_up_included"]:
                warnings.append(f"{s['run']} ({name}) has only {s['epochs']} epoch(s): no steady state after "
                                f"{skip} warm-up epoch(s), so its figures include the warm-up")
        if len(summaries) == 1:
            warnings.append(f"{name} has one replicate: its figures are only directional")
    scales = {(s["world_size"], s["samples"]) for summaries in runs.values() for s in summaries}
    if len(scales) > 1:
        warnings.append("runs differ in scale (world size, samples per epoch): "
                        + ", ".join(f"{w} ranks/{n} samples" for w, n in sorted(scales))
                        + "; compare the per-sample figures, not throughput")
    warnings += settings_differences(runs, vary)
    first = next(iter(runs))
    base = spread([s["samples_per_s"] for s in runs[first]])[0]
    lines = ["| group | io_mode | replicates | samples/s mean ± stdev (CV) | vs " + first + " | epoch s | "
             "data wait | file opens/sample | HDF5 calls/sample |", "|---|---|---|---|---|---|---|---|---|"]
    for name, summaries in runs.items():
        rate = spread([s["samples_per_s"] for s in summaries])
        mean = {f: spread([s[f] for s in summaries])[0] for f in FIGURES}
        lines.append(f"| {name} | {summaries[0]['io_mode']} | {len(summaries)} | {rate[0]:.1f} ± {rate[1]:.1f} "
                     f"({rate[2]:.1%}) | {rate[0] / base:.2f}x | {mean['wall_s']:.1f} | "
                     f"{mean['data_wait_share']:.1%} | {mean['file_opens_per_sample']:.3f} | "
                     f"{mean['h5_calls_per_sample']:.2f} |")
    lines += ["", "| group | " + " | ".join(p[:-2] for p in PHASES) + " |", "|---|" + "---|" * len(PHASES)]
    for name, summaries in runs.items():
        lines.append(f"| {name} | " + " | ".join(f"{spread([s[p] for s in summaries])[0]:.2f}" for p in PHASES) + " |")
    return "\n".join(lines), warnings


def settings_differences(runs: dict[str, list[dict]], vary: tuple[str, ...] = ("io_mode",)) -> list[str]:
    """One warning per timing-relevant setting on which the runs disagree: any setting within a group of
    replicates, and across groups every setting except those the comparison is about (``vary``)."""
    out = []
    for name, summaries in runs.items():
        for key in SETTINGS:
            values = {repr(s["settings"][key]) for s in summaries}
            if len(values) > 1:
                out.append(f"replicates of {name} differ in {key} ({', '.join(sorted(values))}); "
                           "their timings are not comparable")
    for key in (k for k in SETTINGS if k not in vary):
        values = {f"{name}:{Path(s['run']).name}": s["settings"][key] for name, summaries in runs.items()
                  for s in summaries}
        if len({repr(v) for v in values.values()}) > 1:
            out.append(f"runs differ in {key}: " + ", ".join(f"{run}={value}" for run, value in values.items())
                       + "; their timings are not comparable")
    return out


def parse_groups(specs: list[str]) -> dict[str, list[Path]]:
    """NAME=DIR[,DIR...] arguments -> {name: [dirs]}; a bare DIR is its own group."""
    groups: dict[str, list[Path]] = {}
    for spec in specs:
        name, _, dirs = spec.partition("=") if "=" in spec else (spec, "", spec)
        paths = [Path(d) for d in dirs.split(",") if d]
        for path in paths:
            if not (path / "epochs.jsonl").exists():
                raise SystemExit(f"error: {path} has no epochs.jsonl (not a PECAN run directory?)")
        groups[name] = paths
    return groups


def main(argv=None) -> int:
    """Print the table and the warnings."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("groups", nargs="+", metavar="NAME=RUN_DIR[,RUN_DIR...]")
    parser.add_argument("--skip", type=int, default=1, help="warm-up epochs left out of each run's mean")
    parser.add_argument("--strict", action="store_true",
                        help="refuse (exit 2) when the runs differ in threads, workers, io_mode, amp, tracing or "
                             "world size")
    parser.add_argument("--vary", action="append", choices=SETTINGS, default=None,
                        help="a setting the groups are meant to differ in (repeatable; default io_mode)")
    args = parser.parse_args(argv)
    table, warnings = compare(parse_groups(args.groups), args.skip, tuple(args.vary or ("io_mode",)))
    print(table)
    for warning in warnings:
        print(f"warning: {warning}")
    if args.strict and any("not comparable" in w for w in warnings):
        print("error: --strict and the runs' settings differ", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
