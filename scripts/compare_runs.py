"""Compare runs (and their replicates) from their epochs.jsonl, the way field notes section 3 asks.

    python scripts/compare_runs.py baseline=runs/reopen-1,runs/reopen-2 packed=runs/packed-1,runs/packed-2

Each argument is NAME=RUN_DIR[,RUN_DIR...]: one group of replicates. Per run, epochs after the first
``--skip`` (warm-up) are averaged; per group, the replicate mean, stdev and CV are shown, and throughput is
compared with the first group. Before crediting a speed-up it checks that the groups ran at the same scale
(world size, samples per epoch) and that every run completed its configured epochs; when they did not,
only the work-normalised figures (file opens and HDF5 calls per sample) are comparable, and it says so.
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

from pecan.report import read_records  # noqa: E402

FIGURES = ("samples_per_s", "wall_s", "data_wait_share", "file_opens_per_sample", "h5_calls_per_sample")
NORMALISED = ("file_opens_per_sample", "h5_calls_per_sample")


def run_summary(run_dir: Path, skip: int) -> dict:
    """Steady-state means of one run, plus what is needed to judge comparability."""
    records = read_records(run_dir / "epochs.jsonl")
    configured = yaml.safe_load((run_dir / "config.yaml").read_text())["train"]["epochs"]
    steady = records[skip:] or records
    summary = {f: statistics.fmean(r[f] for r in steady if r.get(f) is not None) for f in FIGURES}
    summary.update(run=str(run_dir), epochs=len(records), configured_epochs=configured,
                   complete=len(records) >= configured, world_size=records[-1]["world_size"],
                   samples=records[-1]["samples"], io_mode=records[-1].get("io_mode"))
    return summary


def spread(values: list[float]) -> tuple[float, float, float]:
    """Mean, sample stdev (0 for one replicate) and coefficient of variation."""
    mean = statistics.fmean(values)
    stdev = statistics.stdev(values) if len(values) > 1 else 0.0
    return mean, stdev, (stdev / mean if mean else math.nan)


def compare(groups: dict[str, list[Path]], skip: int = 1) -> tuple[str, list[str]]:
    """The comparison table and the list of warnings."""
    runs = {name: [run_summary(d, skip) for d in dirs] for name, dirs in groups.items()}
    warnings = []
    for name, summaries in runs.items():
        for s in summaries:
            if not s["complete"]:
                warnings.append(f"{s['run']} ({name}) stopped after {s['epochs']} of {s['configured_epochs']} epochs")
        if len(summaries) == 1:
            warnings.append(f"{name} has one replicate: its figures are only directional")
    scales = {(s["world_size"], s["samples"]) for summaries in runs.values() for s in summaries}
    if len(scales) > 1:
        warnings.append("runs differ in scale (world size, samples per epoch): "
                        + ", ".join(f"{w} ranks/{n} samples" for w, n in sorted(scales))
                        + "; compare the per-sample figures, not throughput")
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
    return "\n".join(lines), warnings


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
    args = parser.parse_args(argv)
    table, warnings = compare(parse_groups(args.groups), args.skip)
    print(table)
    for warning in warnings:
        print(f"warning: {warning}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
