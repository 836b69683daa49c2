"""Compare runs (and their replicates) from their run directories: figures, and every setting that differs.

    pecan runs compare baseline=runs/reopen-1,runs/reopen-2 packed=runs/packed-1,runs/packed-2

Each argument is NAME=RUN_DIR[,RUN_DIR...]: one group of replicates (a bare RUN_DIR is its own group). Per
run, epochs after the first ``--skip`` (warm-up) are averaged; per group with two or more replicates the
mean, stdev and CV are shown (one replicate: its figures only), and throughput is compared with the first
group; a second table splits the epoch into its phases (rank 0, seconds).

Before crediting a speed-up it lists every setting on which the runs differ: each key of the resolved
configs (config.yaml: model, data, optimisation, io), and from the records the threads, loader workers,
tracing, world size, launcher, device and code version (git commit, dirty flag, package versions). It
warns when runs did not complete their configured epochs, differ in scale, or have one epoch only (the
warm-up is then included). ``--strict`` exits 2 on any difference outside the allow-list (``--allow KEY``,
shell-style patterns, plus ``--vary`` settings and the keys that never change results, such as out_dir).
"""

from __future__ import annotations

import argparse
import fnmatch
import math
import statistics
from pathlib import Path
from typing import Any

from pecan.report import PHASES, read_records
from pecan.runs import standalone_main
from pecan.runs.records import read_config, read_run_records
from pecan.runtime.errors import ConfigError

FIGURES = ("samples_per_s", "wall_s", "data_wait_share", "file_opens_per_sample", "h5_calls_per_sample", *PHASES)
# Settings that change timings; runs compared for speed should agree on them (the record's names).
SETTINGS = ("intra_op_threads", "num_workers", "io_mode", "amp", "tracing", "world_size")
# Keys whose value never changes what a run computes or how fast: where it writes, how it shows progress.
NEVER_MATTER = (
    "train.out_dir",
    "train.resume",
    "train.sync_dir",
    "train.sync_every_minutes",
    "train.progress",
    "train.progress_every_seconds",
    "train.report",
    "train.plots",
    "train.tensorboard",
    "train.tensorboard_every_steps",
    "run.host",
    "run.argv",
    "run.started",
    "run.resumed_from",
    "run.start_epoch",
)
# --vary SETTING also allows the config keys that set it.
VARY_KEYS = {
    "io_mode": ("data.io_mode",),
    "amp": ("train.amp",),
    "tracing": ("trace.enabled", "trace.posix"),
    "intra_op_threads": ("train.intra_op_threads", "run.threads_from"),
    "num_workers": ("data.num_workers",),
    "world_size": ("run.launcher",),
}
# What each start recorded in runs.jsonl that is a setting (the rest is provenance of the moment).
RUN_KEYS = (
    "world_size",
    "launcher",
    "device",
    "intra_op_threads",
    "num_workers",
    "cores_per_rank",
    "threads_from",
    "python",
)


def flatten(mapping: Any, prefix: str = "") -> dict[str, Any]:
    """{'a': {'b': 1}} -> {'a.b': 1}; lists stay values."""
    if not isinstance(mapping, dict):
        return {prefix: mapping} if prefix else {}
    out: dict[str, Any] = {}
    for key, value in mapping.items():
        name = f"{prefix}.{key}" if prefix else str(key)
        out.update(flatten(value, name) if isinstance(value, dict) else {name: value})
    return out


def resolved_settings(run_dir: Path, records: list[dict], config: dict) -> dict[str, Any]:
    """Every setting of a run as flat keys: the resolved config's ``section.key`` and ``run.*`` from the
    last start (runs.jsonl) and the last epoch record (threads, workers, tracing, world size, code)."""
    runs = read_records(run_dir / "runs.jsonl") if (run_dir / "runs.jsonl").exists() else [{}]
    started, last = runs[-1], records[-1]
    settings = flatten(config)
    settings.update({f"run.{key}": started[key] for key in RUN_KEYS if key in started})
    git = started.get("git") or {}
    if git:
        settings.update({"run.git_commit": git.get("commit"), "run.git_dirty": git.get("dirty")})
    settings.update({f"run.packages.{name}": version for name, version in (started.get("packages") or {}).items()})
    for key in SETTINGS:
        if key in last:
            settings[f"run.{key}"] = last[key]
    return settings


def run_settings(run_dir: Path, records: list[dict], config: dict) -> dict:
    """The timing-relevant settings of a run, from its last epoch record, runs.jsonl and config.yaml."""
    runs = read_records(run_dir / "runs.jsonl") if (run_dir / "runs.jsonl").exists() else [{}]
    last, started = records[-1], runs[-1]
    tracing = last.get(
        "tracing", (started.get("tracing") or {}).get("active", (config.get("trace") or {}).get("enabled"))
    )
    return {
        "intra_op_threads": last.get("intra_op_threads", started.get("intra_op_threads")),
        "num_workers": last.get("num_workers", started.get("num_workers")),
        "io_mode": last.get("io_mode"),
        "amp": last.get("amp", (config.get("train") or {}).get("amp")),
        "tracing": tracing,
        "world_size": last.get("world_size"),
    }


def run_summary(run_dir: Path, skip: int) -> dict:
    """Steady-state means of one run, plus what is needed to judge comparability."""
    records = read_run_records(run_dir / "epochs.jsonl")
    config = read_config(run_dir)
    configured = (config.get("train") or {}).get("epochs", len(records))
    steady = records[skip:] or records
    summary = {f: statistics.fmean([r[f] for r in steady if r.get(f) is not None] or [0.0]) for f in FIGURES}
    summary.update(
        run=str(run_dir),
        epochs=len(records),
        configured_epochs=configured,
        warm_up_included=len(records) <= skip,
        settings=run_settings(run_dir, records, config),
        resolved=resolved_settings(run_dir, records, config),
        complete=len(records) >= configured,
        world_size=records[-1].get("world_size"),
        samples=records[-1].get("samples"),
        io_mode=records[-1].get("io_mode"),
    )
    return summary


def spread(values: list[float]) -> tuple[float, float, float]:
    """Mean, sample stdev and coefficient of variation (stdev and CV are NaN for one replicate)."""
    mean = statistics.fmean(values)
    if len(values) < 2:
        return mean, math.nan, math.nan
    stdev = statistics.stdev(values)
    return mean, stdev, (stdev / mean if mean else math.nan)


def rate_text(values: list[float]) -> str:
    """'11.0 ± 1.4 (12.9%)' for replicates; '11.0 (1 run)' for one."""
    mean, stdev, cv = spread(values)
    return f"{mean:.1f} (1 run)" if len(values) < 2 else f"{mean:.1f} ± {stdev:.1f} ({cv:.1%})"


def label(name: str, summary: dict) -> str:
    """How a run is named in the difference list: group, and the run directory's name."""
    return f"{name}:{Path(summary['run']).name}"


def differing_keys(runs: dict[str, list[dict]]) -> dict[str, dict[str, Any]]:
    """key -> {run label: value} for every resolved setting on which any two runs differ (absent: None)."""
    labelled = {label(name, s): s["resolved"] for name, summaries in runs.items() for s in summaries}
    keys = sorted(set().union(*(settings.keys() for settings in labelled.values())))
    out = {}
    for key in keys:
        values = {run: settings.get(key) for run, settings in labelled.items()}
        if len({repr(v) for v in values.values()}) > 1:
            out[key] = values
    return out


def allowed(key: str, allow: tuple[str, ...], vary: tuple[str, ...]) -> bool:
    """Whether a difference in ``key`` is expected: never-matter keys, --allow patterns, --vary settings."""
    patterns = (*NEVER_MATTER, *allow, *(f"run.{v}" for v in vary), *(k for v in vary for k in VARY_KEYS.get(v, ())))
    return any(fnmatch.fnmatchcase(key, pattern) for pattern in patterns)


def difference_rows(differences: dict[str, dict[str, Any]], allow: tuple[str, ...], vary: tuple[str, ...]) -> list[str]:
    """The table of differing settings: key, each run's value, and whether the difference is allowed."""
    if not differences:
        return ["every setting agrees (config.yaml keys, threads, world size, code version)"]
    runs = list(next(iter(differences.values())))
    rows = ["| setting | " + " | ".join(runs) + " | allowed |", "|" + "---|" * (len(runs) + 2)]
    for key, values in differences.items():
        rows.append(
            f"| {key} | " + " | ".join(str(values[r]) for r in runs) + f" | "
            f"{'yes' if allowed(key, allow, vary) else 'no'} |"
        )
    return rows


def compare(
    groups: dict[str, list[Path]], skip: int = 1, vary: tuple[str, ...] = ("io_mode",), allow: tuple[str, ...] = ()
) -> tuple[str, list[str]]:
    """The comparison tables (figures, phases, differing settings) and the list of warnings."""
    runs = {name: [run_summary(d, skip) for d in dirs] for name, dirs in groups.items()}
    warnings = []
    for name, summaries in runs.items():
        for s in summaries:
            if not s["complete"]:
                warnings.append(f"{s['run']} ({name}) stopped after {s['epochs']} of {s['configured_epochs']} epochs")
            if s["warm_up_included"]:
                warnings.append(
                    f"{s['run']} ({name}) has only {s['epochs']} epoch(s): no steady state after "
                    f"{skip} warm-up epoch(s), so its figures include the warm-up"
                )
        if len(summaries) == 1:
            warnings.append(f"{name} has one replicate: its figures are only directional")
    scales = {(s["world_size"], s["samples"]) for summaries in runs.values() for s in summaries}
    if len(scales) > 1:
        warnings.append(
            "runs differ in scale (world size, samples per epoch): "
            + ", ".join(f"{w} ranks/{n} samples" for w, n in sorted(scales, key=str))
            + "; compare the per-sample figures, not throughput"
        )
    warnings += settings_differences(runs, vary)
    differences = differing_keys(runs)
    unexpected = [key for key in differences if not allowed(key, allow, vary)]
    if unexpected:
        warnings.append(
            f"runs differ in {len(unexpected)} setting(s) outside the allow-list: "
            + "; ".join(f"{key} ({', '.join(f'{r}={v}' for r, v in differences[key].items())})" for key in unexpected)
        )
    tables = [*figure_rows(runs), "", *phase_rows(runs), "", *difference_rows(differences, allow, vary)]
    return "\n".join(tables), warnings


def figure_rows(runs: dict[str, list[dict]]) -> list[str]:
    """One row per group: throughput with its spread, vs the first group, epoch wall, data wait, I/O."""
    first = next(iter(runs))
    base = spread([s["samples_per_s"] for s in runs[first]])[0]
    lines = [
        "| group | io_mode | replicates | samples/s mean ± stdev (CV) | vs " + first + " | epoch s | "
        "data wait | file opens/sample | HDF5 calls/sample |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, summaries in runs.items():
        rates = [s["samples_per_s"] for s in summaries]
        mean = {f: spread([s[f] for s in summaries])[0] for f in FIGURES}
        lines.append(
            f"| {name} | {summaries[0]['io_mode']} | {len(summaries)} | {rate_text(rates)} | "
            f"{mean['samples_per_s'] / base if base else math.nan:.2f}x | {mean['wall_s']:.1f} | "
            f"{mean['data_wait_share']:.1%} | {mean['file_opens_per_sample']:.3f} | "
            f"{mean['h5_calls_per_sample']:.2f} |"
        )
    return lines


def phase_rows(runs: dict[str, list[dict]]) -> list[str]:
    """One row per group: its mean seconds per phase."""
    lines = ["| group | " + " | ".join(p[:-2] for p in PHASES) + " |", "|---|" + "---|" * len(PHASES)]
    for name, summaries in runs.items():
        lines.append(f"| {name} | " + " | ".join(f"{spread([s[p] for s in summaries])[0]:.2f}" for p in PHASES) + " |")
    return lines


def settings_differences(runs: dict[str, list[dict]], vary: tuple[str, ...] = ("io_mode",)) -> list[str]:
    """One warning per timing-relevant setting on which the runs disagree: any setting within a group of
    replicates, and across groups every setting except those the comparison is about (``vary``)."""
    out = []
    for name, summaries in runs.items():
        for key in SETTINGS:
            values = {repr(s["settings"][key]) for s in summaries}
            if len(values) > 1:
                out.append(
                    f"replicates of {name} differ in {key} ({', '.join(sorted(values))}); "
                    "their timings are not comparable"
                )
    for key in (k for k in SETTINGS if k not in vary):
        values = {label(name, s): s["settings"][key] for name, summaries in runs.items() for s in summaries}
        if len({repr(v) for v in values.values()}) > 1:
            out.append(
                f"runs differ in {key}: "
                + ", ".join(f"{run}={value}" for run, value in values.items())
                + "; their timings are not comparable"
            )
    return out


def parse_groups(specs: list[str]) -> dict[str, list[Path]]:
    """NAME=DIR[,DIR...] arguments -> {name: [dirs]}; a bare DIR is its own group."""
    groups: dict[str, list[Path]] = {}
    for spec in specs:
        name, _, dirs = spec.partition("=") if "=" in spec else (spec, "", spec)
        paths = [Path(d) for d in dirs.split(",") if d]
        for path in paths:
            if not (path / "epochs.jsonl").exists():
                raise ConfigError(f"{path} has no epochs.jsonl (not a PECAN run directory?)")
        groups[name] = paths
    return groups


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The compare options (shared by `pecan runs compare` and scripts/compare_runs.py)."""
    parser.add_argument("groups", nargs="+", metavar="NAME=RUN_DIR[,RUN_DIR...]")
    parser.add_argument("--skip", type=int, default=1, help="warm-up epochs left out of each run's mean")
    parser.add_argument(
        "--strict",
        action="store_true",
        help="refuse (exit 2) when the runs differ in any setting outside the allow-list",
    )
    parser.add_argument(
        "--allow",
        action="append",
        default=[],
        metavar="KEY",
        help="a setting allowed to differ, e.g. model.hidden or 'data.*' (repeatable)",
    )
    parser.add_argument(
        "--vary",
        action="append",
        choices=SETTINGS,
        default=None,
        help="a timing setting the groups are meant to differ in (repeatable; default io_mode)",
    )


def run(args: argparse.Namespace) -> int:
    """Print the tables and the warnings; 2 under --strict when anything unexpected differs."""
    table, warnings = compare(parse_groups(args.groups), args.skip, tuple(args.vary or ("io_mode",)), tuple(args.allow))
    print(table)
    for warning in warnings:
        print(f"warning: {warning}")
    if args.strict and any("not comparable" in w or "outside the allow-list" in w for w in warnings):
        raise ConfigError("--strict and the runs' settings differ (allow a key with --allow KEY)")
    return 0


def main(argv=None, prog: str | None = None) -> int:
    """Command line of the comparison."""
    return standalone_main(__doc__, add_arguments, run, argv, prog)
