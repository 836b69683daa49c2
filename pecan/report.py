"""Epoch reports: one JSON record per epoch (a contract other tools read), the wall-time table, the
per-rank view of each phase, the end-of-run summary and the run's provenance."""
from __future__ import annotations

import json
import math
import os
import statistics
import subprocess
from pathlib import Path
from typing import Any, Sequence

from pecan.fileio import write_text

# Seconds per phase of one rank's epoch. grad_comm_s is the gradient all-reduce wait after the last
# bucket's gradients were ready (DDP on CPU), taken out of backward_s.
PHASES = ("data_wait_s", "transfer_s", "forward_s", "backward_s", "grad_comm_s", "optimizer_s", "eval_s",
          "checkpoint_s")
# Per-rank figures gathered once per epoch besides the phases (``ranks`` in the record).
RANK_FIGURES = (*PHASES, "step_s", "worker_busy_s", "peak_rss_mb", "cuda_peak_mb")

# Fields every epochs.jsonl record carries.
REQUIRED_FIELDS = ("epoch", "wall_s", "samples", "train_loss", "val_loss", "val_auc", "val_acc", "val_top1",
                   "world_size", "io_mode", "file_opens_per_sample", "h5_calls_per_sample",
                   "bytes_read_per_sample", *PHASES, "data_wait_share", "ranks", "straggler_ratio",
                   "num_workers", "intra_op_threads", "completed", "config_digest")


def rank_summary(per_rank: Sequence[Sequence[float]]) -> dict[str, Any]:
    """Rows of RANK_FIGURES (one row per rank) -> the record's ``ranks`` lists, ``{phase}_mean`` and
    ``{phase}_max`` across ranks, and the straggler ratio: max over mean of the ranks' step time (their
    forward + backward + optimizer seconds, without waiting for each other)."""
    columns = {name: [float(row[k]) for row in per_rank] for k, name in enumerate(RANK_FIGURES)}
    out: dict[str, Any] = {"ranks": columns}
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
    return {"file_opens_per_sample": counts.get("file_opens", 0) / samples,
            "h5_calls_per_sample": h5_calls / samples,
            "bytes_read_per_sample": counts.get("bytes_read", 0) / samples}


def _clean(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def append_record(path: str | os.PathLike, record: dict[str, Any]) -> None:
    """Append one JSON line by rewriting the file atomically (a crash never leaves half a line)."""
    path = Path(path)
    previous = path.read_text() if path.exists() else ""
    write_text(path, previous + json.dumps({k: _clean(v) for k, v in record.items()}) + "\n")


def read_records(path: str | os.PathLike, events: bool = False) -> list[dict[str, Any]]:
    """All epoch records of a run, read line by line; a damaged line is a DataError naming file and line.
    Marker records (an ``event`` key, e.g. a stop) are left out unless ``events``."""
    from pecan.errors import DataError

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


def epoch_line(record: dict[str, Any]) -> str:
    """The one line printed per epoch."""
    def num(key: str, spec: str = ".4f") -> str:
        value = record.get(key)
        return "n/a" if value is None or (isinstance(value, float) and math.isnan(value)) else format(value, spec)

    return (f"epoch {record['epoch']:>3} | {record['wall_s']:.1f}s | train_loss {num('train_loss')} | "
            f"val_loss {num('val_loss')} | val_auc {num('val_auc')} | val_acc {num('val_acc')} | "
            f"val_top1 {num('val_top1')} | {num('samples_per_s', '.1f')} samples/s")


def wall_time_table(record: dict[str, Any]) -> str:
    """Where the epoch's wall time went, phase by phase (rank 0, and mean/max over ranks when there are
    several), then the ranks' balance, the loader and the I/O work per sample."""
    wall = max(record["wall_s"], 1e-9)
    several = (record.get("world_size") or 1) > 1 and f"{PHASES[0]}_mean" in record
    rows = [f"  {'phase':<14}{'seconds':>10}{'share':>9}" + (f"{'mean':>9}{'max':>9}" if several else "")]
    accounted = 0.0
    for phase in PHASES:
        seconds = record.get(phase, 0.0) or 0.0
        accounted += seconds
        spread = f"{record[phase + '_mean']:>9.2f}{record[phase + '_max']:>9.2f}" if several else ""
        rows.append(f"  {phase[:-2]:<14}{seconds:>10.2f}{seconds / wall:>8.1%}{spread}")
    other = max(wall - accounted, 0.0)
    rows.append(f"  {'other':<14}{other:>10.2f}{other / wall:>8.1%}")
    if "straggler_ratio" in record:
        busy = record.get("ranks", {}).get("worker_busy_s") or [0.0]
        rows.append(f"  straggler ratio {record['straggler_ratio']:.2f} (max/mean step time over "
                    f"{record.get('world_size', 1)} ranks); {record.get('num_workers')} loader workers/rank busy "
                    f"{max(busy):.2f}s; {record.get('intra_op_threads')} intra-op threads; peak RSS "
                    f"{max(record['ranks'].get('peak_rss_mb') or [0]):.0f} MB")
    rows.append(f"  io_mode {record.get('io_mode')}: {record.get('file_opens_per_sample', 0):.3f} file opens, "
                f"{record.get('h5_calls_per_sample', 0):.2f} HDF5 calls, "
                f"{record.get('bytes_read_per_sample', 0) / 1024:.1f} KiB read per sample")
    return "\n".join(rows)


def run_summary(records: list[dict[str, Any]]) -> str:
    """The end-of-run table: one row per epoch."""
    rows = ["| epoch | wall s | samples/s | train loss | val AUC | data wait | compute | grad comm | straggler |",
            "|---|---|---|---|---|---|---|---|---|"]
    for r in records:
        compute = sum(r.get(k) or 0.0 for k in ("forward_s", "backward_s", "optimizer_s"))
        auc = r.get("val_auc")
        rows.append(f"| {r['epoch']} | {r['wall_s']:.1f} | {r.get('samples_per_s') or 0:.1f} | "
                    f"{r.get('train_loss') or math.nan:.4f} | {'n/a' if auc is None else format(auc, '.4f')} | "
                    f"{r.get('data_wait_share') or 0:.1%} | {compute:.1f}s | {r.get('grad_comm_s') or 0:.2f}s | "
                    f"{r.get('straggler_ratio') or 1.0:.2f} |")
    return "\n".join(rows)


# ---------------------------------------------------------------------------- provenance

def git_state(root: Path) -> dict[str, Any]:
    """Commit and dirty flag of the source tree, when it is a git checkout."""
    try:
        commit = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True,
                                timeout=10).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10).stdout.strip()
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
