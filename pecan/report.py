"""Epoch reports: one JSON record per epoch (a contract other tools read) and a wall-time table."""
from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

from pecan.fileio import write_text

PHASES = ("data_wait_s", "forward_s", "backward_s", "optimizer_s", "eval_s", "checkpoint_s")

# Fields every epochs.jsonl record carries.
REQUIRED_FIELDS = ("epoch", "wall_s", "samples", "train_loss", "val_loss", "val_auc", "val_acc", "val_top1",
                   "world_size", "io_mode", "file_opens_per_sample", "h5_calls_per_sample",
                   "bytes_read_per_sample", *PHASES, "data_wait_share")


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


def read_records(path: str | os.PathLike) -> list[dict[str, Any]]:
    """All epoch records of a run."""
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]


def epoch_line(record: dict[str, Any]) -> str:
    """The one line printed per epoch."""
    def num(key: str, spec: str = ".4f") -> str:
        value = record.get(key)
        return "n/a" if value is None or (isinstance(value, float) and math.isnan(value)) else format(value, spec)

    return (f"epoch {record['epoch']:>3} | {record['wall_s']:.1f}s | train_loss {num('train_loss')} | "
            f"val_loss {num('val_loss')} | val_auc {num('val_auc')} | val_acc {num('val_acc')} | "
            f"val_top1 {num('val_top1')} | {num('samples_per_s', '.1f')} samples/s")


def wall_time_table(record: dict[str, Any]) -> str:
    """Where the epoch's wall time went, phase by phase, plus the I/O work per sample."""
    wall = max(record["wall_s"], 1e-9)
    rows = [f"  {'phase':<14}{'seconds':>10}{'share':>9}"]
    accounted = 0.0
    for phase in PHASES:
        seconds = record.get(phase, 0.0) or 0.0
        accounted += seconds
        rows.append(f"  {phase[:-2]:<14}{seconds:>10.2f}{seconds / wall:>8.1%}")
    other = max(wall - accounted, 0.0)
    rows.append(f"  {'other':<14}{other:>10.2f}{other / wall:>8.1%}")
    rows.append(f"  io_mode {record.get('io_mode')}: {record.get('file_opens_per_sample', 0):.3f} file opens, "
                f"{record.get('h5_calls_per_sample', 0):.2f} HDF5 calls, "
                f"{record.get('bytes_read_per_sample', 0) / 1024:.1f} KiB read per sample")
    return "\n".join(rows)
