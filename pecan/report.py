"""Epoch reports: one JSON record per epoch (a contract other tools read), the wall-time table, the
per-rank view of each phase, the end-of-run summary and the run's provenance."""

from __future__ import annotations

import json
import math
import os
import statistics
import subprocess
from pathlib import Path
from typing import Any, Mapping, Sequence

from pecan.runtime.fileio import json_text, write_text

# The phases of one rank's epoch: epochs.jsonl field (seconds) -> (trace category, event name) of the span
# that times it. The trainer's phase clocks and spans (PhaseTimer.span), this report and the trace report
# (pecan runs trace) all read this one table. grad_comm_s is the gradient all-reduce wait after the last
# bucket's gradients were ready (DDP on CPU), taken out of backward_s.
PHASE_EVENTS = {
    "data_wait_s": ("dataloader", "fetch"),
    "transfer_s": ("device", "transfer"),
    "forward_s": ("compute", "forward"),
    "backward_s": ("compute", "backward"),
    "grad_comm_s": ("comm", "all_reduce"),
    "optimizer_s": ("compute", "step"),
    "eval_s": ("pipeline", "evaluate"),
    "checkpoint_s": ("checkpoint", "capture"),
}
PHASES = tuple(PHASE_EVENTS)
# Evaluation's own transfer and forward (inside eval_s) are named apart from training's in traces.
EVAL_SPANS = {"transfer": ("device", "eval_transfer"), "forward": ("pecan.eval", "eval_forward")}
# The per-rank figures (the phases and more), gathered by name once per epoch; their order in ``ranks``.
RANK_FIGURES = (*PHASES, "step_s", "worker_busy_s", "peak_rss_mb", "cuda_peak_mb", "cpu_share")
# Below this share of the CPU its threads asked for (process CPU time / (wall x threads)), a rank is starved.
CPU_SHARE_WARN = 0.6

# Fields every epochs.jsonl record carries.
REQUIRED_FIELDS = (
    "epoch",
    "wall_s",
    "samples",
    "train_loss",
    "val_loss",
    "val_auc",
    "val_acc",
    "val_top1",
    "world_size",
    "io_mode",
    "file_opens_per_sample",
    "h5_calls_per_sample",
    "bytes_read_per_sample",
    *PHASES,
    "data_wait_share",
    "ranks",
    "straggler_ratio",
    "num_workers",
    "intra_op_threads",
    "completed",
    "config_digest",
)
# The fields of REQUIRED_FIELDS that do not hold a number: the I/O mode, the per-rank lists, a flag, a digest.
TEXT_FIELDS = ("io_mode", "ranks", "completed", "config_digest")
# Numeric fields only some records carry: the least-served rank, skipped samples, the fit check's figures (the
# epochs without a check carry none; pecan/train/fit_check.py).
OPTIONAL_NUMBER_FIELDS = (
    "cpu_share_min",
    "cpu_share_min_rank",
    "skipped_samples",
    "skipped_at_start",
    "fit_complexes",
    "fit_top1",
    "fit_docking_top1",
    "fit_teacher_top1",
    "fit_teacher_spearman",
)
# The numeric fields by name (the readers of pecan/runs/records.py also take names ending in a unit suffix).
NUMBER_FIELDS = (*(f for f in REQUIRED_FIELDS if f not in TEXT_FIELDS), *OPTIONAL_NUMBER_FIELDS)


def rank_summary(per_rank: Sequence[Mapping[str, float]]) -> dict[str, Any]:
    """Each rank's figures by name (RANK_FIGURES; one mapping per rank) -> the record's ``ranks`` lists (a
    figure some rank lacks is left out), ``{phase}_mean`` and ``{phase}_max`` across ranks, and the straggler
    ratio: max over mean of the ranks' step time (their forward + backward + optimizer seconds, without
    waiting for each other)."""
    columns = {
        name: [float(row[name]) for row in per_rank] for name in RANK_FIGURES if all(name in row for row in per_rank)
    }
    out: dict[str, Any] = {"ranks": columns}
    if columns.get("cpu_share") and not all(math.isfinite(s) for s in columns["cpu_share"]):
        del columns["cpu_share"]  # not measured (accelerator runs)
    if columns.get("cpu_share"):
        shares = columns["cpu_share"]
        out.update(cpu_share=shares[0], cpu_share_min=min(shares), cpu_share_min_rank=shares.index(min(shares)))
    for phase in PHASES:
        out[f"{phase}_mean"] = statistics.fmean(columns[phase])
        out[f"{phase}_max"] = max(columns[phase])
    steps = columns["step_s"]
    out["straggler_ratio"] = max(steps) / statistics.fmean(steps) if statistics.fmean(steps) > 0 else 1.0
    return out


def io_ratios(counts: dict[str, int]) -> dict[str, float]:
    """Work-normalised I/O figures that survive different scales and truncated runs."""
    samples = max(counts.get("samples", 0), 1)
    h5_calls = sum(counts.get(k, 0) for k in ("h5_file_opens", "h5_object_opens", "attr_reads", "dataset_reads"))
    return {
        "file_opens_per_sample": counts.get("file_opens", 0) / samples,
        "h5_calls_per_sample": h5_calls / samples,
        "bytes_read_per_sample": counts.get("bytes_read", 0) / samples,
    }


def _clean(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def append_record(path: str | os.PathLike, record: dict[str, Any]) -> None:
    """Append one JSON line by rewriting the file atomically (a crash never leaves half a line)."""
    path = Path(path)
    previous = path.read_text() if path.exists() else ""
    write_text(path, previous + json_text({k: _clean(v) for k, v in record.items()}) + "\n")


def read_records(path: str | os.PathLike, events: bool = False) -> list[dict[str, Any]]:
    """All epoch records of a run, read line by line; a damaged line is a DataError naming file and line.
    Marker records (an ``event`` key, e.g. a stop) are left out unless ``events``."""
    from pecan.runtime.errors import DataError

    records = []
    with open(path, encoding="utf-8", errors="replace") as handle:
        for number, line in enumerate(handle, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except ValueError as err:
                raise DataError(f"{path}:{number}: damaged record ({err}); repair or delete that line") from None
            if not isinstance(record, dict):
                raise DataError(f"{path}:{number}: damaged record (not a JSON object); repair or delete that line")
            if events or "event" not in record:
                records.append(record)
    return records


def read_epoch_records(path: str | os.PathLike) -> list[dict[str, Any]]:
    """``read_records`` for a reader that needs at least one epoch: none (an empty file, only markers) is a
    DataError naming the file."""
    from pecan.runtime.errors import DataError

    records = read_records(path)
    if not records:
        raise DataError(f"{path}: no epoch records (the run has not finished an epoch yet)")
    return records


def epoch_line(record: dict[str, Any]) -> str:
    """The one line printed per epoch."""

    def num(key: str, spec: str = ".4f") -> str:
        value = record.get(key)
        return "n/a" if value is None or (isinstance(value, float) and math.isnan(value)) else format(value, spec)

    wall = "wall n/a" if record.get("wall_s") is None else f"{record['wall_s']:.1f}s"
    return (
        f"epoch {record['epoch']:>3} | {wall} | train_loss {num('train_loss')} | "
        f"val_loss {num('val_loss')} | val_auc {num('val_auc')} | val_acc {num('val_acc')} | "
        f"val_top1 {num('val_top1')} | {num('samples_per_s', '.1f')} samples/s{cpu_note(record)}{fit_note(record)}"
    )


def fit_note(record: dict[str, Any]) -> str:
    """' | fit top1 0.62 (docking 0.70), teacher top1 0.55, rho 0.48' from the fit check's fields, or ''."""
    if record.get("fit_top1") is None:
        return ""

    def num(key: str) -> str:
        value = record.get(key)
        return "n/a" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.2f}"

    note = f" | fit top1 {num('fit_top1')} (docking {num('fit_docking_top1')})"
    if "fit_teacher_top1" in record:
        note += f", teacher top1 {num('fit_teacher_top1')}, rho {num('fit_teacher_spearman')}"
    return note


def is_starved(record: dict[str, Any]) -> bool:
    """Whether the least-served rank got < CPU_SHARE_WARN of the CPU its threads asked for. One thread is
    judged only over epochs of 30 s or more: a short single-threaded epoch's checkpoint fsync alone can take
    a third of it, and with one thread there is no thread count to lower anyway."""
    share = record.get("cpu_share_min")
    if share is None or share >= CPU_SHARE_WARN:
        return False
    return (record.get("intra_op_threads") or 1) > 1 or (record.get("wall_s") or 0.0) >= 30.0


def cpu_note(record: dict[str, Any]) -> str:
    """' | CPU share 45% on rank 1 (starved)' when a rank got less CPU than its threads asked for, else ''."""
    if not is_starved(record):
        return ""
    share = record["cpu_share_min"]
    return f" | CPU share {share:.0%} on rank {record.get('cpu_share_min_rank', 0)} (starved: see the warning)"


def rank_line(record: dict[str, Any], rank: int) -> str:
    """One rank's own figures of an epoch (for its log file): step time, data wait, gradient wait, CPU share."""
    ranks = record.get("ranks") or {}

    def figure(name: str) -> float:
        values = ranks.get(name) or []
        return values[rank] if rank < len(values) else math.nan

    return (
        f"epoch {record['epoch']} on rank {rank}: step {figure('step_s'):.2f}s, data wait "
        f"{figure('data_wait_s'):.2f}s, grad wait {figure('grad_comm_s'):.2f}s, eval {figure('eval_s'):.2f}s, "
        f"CPU share {figure('cpu_share'):.0%}, peak RSS {figure('peak_rss_mb'):.0f} MB"
    )


def phase_shares(record: dict[str, Any]) -> dict[str, float]:
    """The shares of the epoch that matter for a one-line report: data wait, compute (forward + backward +
    optimizer), gradient wait (only with several ranks), evaluation, checkpoint; each of the epoch's wall."""
    wall = max(record.get("wall_s") or 0.0, 1e-9)
    compute = sum(record.get(k) or 0.0 for k in ("forward_s", "backward_s", "optimizer_s"))
    shares = {"data": (record.get("data_wait_s") or 0.0) / wall, "compute": compute / wall}
    if (record.get("world_size") or 1) > 1:
        shares["comm"] = (record.get("grad_comm_s") or 0.0) / wall
    shares["eval"] = (record.get("eval_s") or 0.0) / wall
    shares["ckpt"] = (record.get("checkpoint_s") or 0.0) / wall
    return shares


def compact_line(record: dict[str, Any], epochs: int, eta_s: float) -> str:
    """train.report: compact: one line per epoch with the losses, AUC, rate, phase shares and the ETA."""
    from pecan.runtime.progress import format_duration

    def num(key: str) -> str:
        value = record.get(key)
        return "n/a" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.4f}"

    shares = " ".join(f"{name} {share:.0%}" for name, share in phase_shares(record).items())
    return (
        f"epoch {record['epoch']:>3}/{epochs} | {record['wall_s']:.1f}s | loss {num('train_loss')} | "
        f"val_loss {num('val_loss')} | val_auc {num('val_auc')} | {record.get('samples_per_s') or 0:.1f} "
        f"samples/s | {shares}{fit_note(record)} | ETA {format_duration(eta_s)}{cpu_note(record)}"
    )


def wall_time_table(record: dict[str, Any]) -> str:
    """Where the epoch's wall time went, phase by phase (rank 0, and mean/max over ranks when there are
    several), then the ranks' balance, the loader and the I/O work per sample."""
    # A record without wall_s (written by an older version) shows its phases' seconds without shares.
    wall = max(record["wall_s"], 1e-9) if record.get("wall_s") is not None else math.nan
    several = (record.get("world_size") or 1) > 1 and f"{PHASES[0]}_mean" in record
    rows = [f"  {'phase':<14}{'seconds':>10}{'share':>9}" + (f"{'mean':>9}{'max':>9}" if several else "")]
    accounted = 0.0
    for phase in PHASES:
        seconds = record.get(phase, 0.0) or 0.0
        accounted += seconds
        spread = (
            f"{record.get(phase + '_mean', math.nan):>9.2f}{record.get(phase + '_max', math.nan):>9.2f}"
            if several
            else ""
        )
        rows.append(f"  {phase[:-2]:<14}{seconds:>10.2f}{_share(seconds, wall)}{spread}")
    other = max(wall - accounted, 0.0)
    other_text = f"{'n/a':>10}" if math.isnan(other) else f"{other:>10.2f}"
    rows.append(f"  {'other':<14}{other_text}{_share(other, wall)}")
    if "ranks" in record:
        ranks = record["ranks"]
        busy = ranks.get("worker_busy_s") or [0.0]
        balance = (
            f"straggler ratio {record.get('straggler_ratio', math.nan):.2f} (max/mean step time over "
            f"{record.get('world_size', 1)} ranks); "
            if several
            else ""
        )
        cpu = (
            f" (CPU share {record['cpu_share_min']:.0%}{' lowest of the ranks' if several else ''})"
            if record.get("cpu_share_min") is not None
            else ""
        )
        rows.append(
            f"  {balance}{record.get('num_workers')} loader workers/rank busy {max(busy):.2f}s; "
            f"{record.get('intra_op_threads')} intra-op threads{cpu}; peak RSS "
            f"{max(ranks.get('peak_rss_mb') or [0]):.0f} MB"
        )
    rows.append(
        f"  io_mode {record.get('io_mode')}: {record.get('file_opens_per_sample', 0):.3f} file opens, "
        f"{record.get('h5_calls_per_sample', 0):.2f} HDF5 calls, "
        f"{record.get('bytes_read_per_sample', 0) / 1024:.1f} KiB read per sample"
    )
    return "\n".join(rows)


def _share(seconds: float, wall: float) -> str:
    return f"{'n/a':>8}" if math.isnan(wall) else f"{seconds / wall:>8.1%}"


def _figure(value: Any, spec: str) -> str:
    return "n/a" if value is None else format(value, spec)


def run_summary(records: list[dict[str, Any]]) -> str:
    """The end-of-run table: one row per epoch."""
    several = any((r.get("world_size") or 1) > 1 for r in records)
    rows = [
        "| epoch | wall s | samples/s | train loss | val AUC | data wait | compute | CPU share |"
        + (" grad comm | straggler |" if several else ""),
        "|" + "---|" * (8 + 2 * several),
    ]
    for r in records:
        compute = sum(r.get(k) or 0.0 for k in ("forward_s", "backward_s", "optimizer_s"))
        auc, cpu = r.get("val_auc"), r.get("cpu_share_min")
        cpu_text = "n/a" if cpu is None else f"{cpu:.0%}" + (" (starved)" if is_starved(r) else "")
        rows.append(
            f"| {r['epoch']} | {_figure(r.get('wall_s'), '.1f')} | {r.get('samples_per_s') or 0:.1f} | "
            f"{r.get('train_loss') or math.nan:.4f} | {'n/a' if auc is None else format(auc, '.4f')} | "
            f"{r.get('data_wait_share') or 0:.1%} | {compute:.1f}s | {cpu_text} |"
            + (f" {r.get('grad_comm_s') or 0:.2f}s | {r.get('straggler_ratio') or 1.0:.2f} |" * several)
        )
    return "\n".join(rows)


# ---------------------------------------------------------------------------- provenance


def git_state(root: Path) -> dict[str, Any]:
    """Commit and dirty flag of the source tree, when it is a git checkout."""
    try:
        commit = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
            capture_output=True,
            text=True,
            timeout=10,
        ).stdout.strip()
        return {"commit": commit or None, "dirty": bool(dirty)}
    except (OSError, subprocess.SubprocessError):
        return {"commit": None, "dirty": None}


def package_versions() -> dict[str, str]:
    """Versions of the packages whose behaviour shapes results."""
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for name in ("torch", "torch-geometric", "h5py", "numpy", "pandas", "pydftracer", "dftracer"):
        try:
            out[name] = version(name)
        except PackageNotFoundError:
            pass
    return out
