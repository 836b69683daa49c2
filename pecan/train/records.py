"""What a run writes about itself in out_dir: epochs.jsonl (one record per epoch, restored from the
checkpoint when a kill lost one), runs.jsonl (one record per start: code, config, threads, tracing) and the
end-of-run summary table and plots. Every write error names the path and the errno.

The epoch record takes two steps: ``gather_epoch`` runs the epoch's collectives once, before the checkpoint,
and ``epoch_record`` formats the record from what they returned, without a collective, so the trainer formats
it before the checkpoint (the copy the checkpoint carries) and again with the checkpoint's time."""

from __future__ import annotations

import dataclasses
import json
import logging
import platform
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

import numpy as np
import torch

from pecan import report
from pecan.data.sample import COUNTER_FIELDS, counters_to_dict
from pecan.engine.distributed import all_reduce_sum, gather_varlen
from pecan.runtime import tracing
from pecan.runtime.fileio import named_write_errors, write_text
from pecan.train.components import weights_in_sync
from pecan.train.timing import cuda_peak_mb, peak_rss_mb

log = logging.getLogger(__name__)

REPO_ROOT = Path(__file__).resolve().parents[2]


class RunFiles:
    """The run directory's records; rank 0 writes them."""

    def __init__(self, out_dir: Path) -> None:
        self.out_dir = Path(out_dir)
        self.epochs = self.out_dir / "epochs.jsonl"
        self.runs = self.out_dir / "runs.jsonl"

    def append_epoch(self, record: dict[str, Any]) -> None:
        """One line in epochs.jsonl."""
        with named_write_errors(self.epochs):
            report.append_record(self.epochs, record)

    def set_aside_earlier(self, why: str) -> Path | None:
        """A run that starts fresh (no checkpoint resumed) in an out_dir whose epochs.jsonl holds an earlier
        run's records: move that file to epochs.before-<UTC time>.jsonl (kept, never overwritten), so that
        epochs.jsonl, the summary and every reader see this run's epochs only. Returns the new path."""
        if not self.epochs.exists() or self.epochs.stat().st_size == 0:
            return None
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
        target = self.out_dir / f"epochs.before-{stamp}.jsonl"
        number = 1
        while target.exists():
            number += 1
            target = self.out_dir / f"epochs.before-{stamp}-{number}.jsonl"
        with named_write_errors(self.epochs):
            self.epochs.rename(target)
        log.warning(
            "%s holds the epoch records of an earlier run and this run starts fresh (%s): moved them to %s",
            self.epochs,
            why,
            target.name,
        )
        return target

    def supersede_after(self, epochs_done: int) -> None:
        """Drop the records of epochs after the checkpoint resumed from (a fallback to an older checkpoint
        trains them again), in one atomic rewrite, so every epoch appears exactly once; markers stay."""
        if not self.epochs.exists():
            return
        kept, dropped = [], []
        for line in self.epochs.read_text(encoding="utf-8", errors="replace").splitlines(keepends=True):
            try:
                record = json.loads(line) if line.strip() else None
            except ValueError:
                record = None  # a damaged line is report.read_records' to name
            epoch = record.get("epoch") if isinstance(record, dict) and "event" not in record else None
            if isinstance(epoch, int) and epoch > epochs_done:
                dropped.append(epoch)
            else:
                kept.append(line)
        if dropped:
            log.warning(
                "epochs.jsonl: the records of epoch(s) %s are superseded: the run resumed after epoch %d and "
                "trains them again",
                ", ".join(map(str, dropped)),
                epochs_done,
            )
            with named_write_errors(self.epochs):
                write_text(self.epochs, "".join(kept))

    def restore_missing(self, records: list[dict[str, Any]], epochs_done: int | None = None) -> None:
        """Append the checkpoint's copy of any epoch record epochs.jsonl lacks (a run killed between the
        checkpoint and the record write); with ``epochs_done``, first drop the records of later epochs
        (supersede_after)."""
        if epochs_done is not None:
            self.supersede_after(epochs_done)
        present = {r.get("epoch") for r in report.read_records(self.epochs)} if self.epochs.exists() else set()
        for record in records:
            if record["epoch"] not in present:
                log.warning("epochs.jsonl lacked epoch %d; restored it from the checkpoint", record["epoch"])
                self.append_epoch({**record, "restored_from_checkpoint": True})

    def append_run(self, info: dict[str, Any]) -> None:
        """One line in runs.jsonl."""
        with named_write_errors(self.runs):
            report.append_record(self.runs, info)

    def write_summary(self, plots: bool) -> None:
        """End of run: the summary table over all epochs of the run directory, and its plots."""
        records = report.read_records(self.epochs)
        print(report.run_summary(records), flush=True)
        if not plots:
            return
        from pecan import plots as plotting

        try:
            paths = plotting.write_plots(self.out_dir, records)
        except ImportError as err:  # an optional extra costs one warning, never the finished run
            log.warning("train.plots is on but matplotlib is missing (pip install '.[plots]'): %s", err)
            return
        except Exception as err:  # noqa: BLE001 - a plot that fails (backend, fonts) is not the run failing
            log.warning("train.plots: the plots were not written (%s: %s)", type(err).__name__, err)
            return
        for path in paths:
            log.info("plot: %s", path)


def run_info(
    config, env, device: torch.device, threads, resumed_from, start_epoch: int, resume: Optional[dict] = None
) -> dict[str, Any]:
    """What this start ran: config digest, git commit, package versions, world size, threads, tracing, and for
    a resume what became of the schedule and the global batch (resume.fit_schedule, global_batch_change)."""
    return {
        "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "config_digest": config.digest(),
        "git": report.git_state(REPO_ROOT),
        "packages": report.package_versions(),
        "tracing": tracing.status(),
        "intra_op_threads": torch.get_num_threads(),
        "num_workers": threads.num_workers,
        "cores_per_rank": threads.cores_per_rank,
        "threads_from": threads.source,
        "python": sys.version.split()[0],
        "host": platform.node(),
        "argv": sys.argv,
        "world_size": env.world_size,
        "launcher": env.launcher,
        "device": str(device),
        "resumed_from": resumed_from,
        "start_epoch": start_epoch,
        "resume": resume,
    }


@dataclass
class GatheredEpoch:
    """What the epoch's collectives returned (``gather_epoch``, once per epoch, before the checkpoint)."""

    counts: dict[str, int]  # the I/O counters summed over ranks
    ranks: list[dict[str, float]]  # every rank's figures (report.RANK_FIGURES), by name, in rank order
    in_sync: dict[str, Any]  # the weight check: weights_checksum, ranks_in_sync


def rank_figures(trainer, phases: dict[str, float], io_counts: np.ndarray) -> dict[str, float]:
    """This rank's figures of the epoch so far, by name (report.RANK_FIGURES)."""
    phase_values = {p: phases.get(p, 0.0) for p in report.PHASES}
    return {
        **phase_values,
        "step_s": sum(phase_values[p] for p in ("forward_s", "backward_s", "optimizer_s")),
        "worker_busy_s": float(io_counts[COUNTER_FIELDS.index("worker_busy_ns")]) / 1e9,
        "peak_rss_mb": peak_rss_mb(),
        "cuda_peak_mb": cuda_peak_mb(trainer.device),
        "cpu_share": trainer.reporter.cpu_share(),
    }


def gather_figures(figures: dict[str, float], env, device, what: str = "epoch_report") -> list[dict[str, float]]:
    """Every rank's ``figures`` (one all-gather); each rank builds the same names, so the names of this
    rank's figures name every rank's values."""
    names = list(figures)
    row = torch.tensor([[figures[name] for name in names]], dtype=torch.float64, device=device)
    return [dict(zip(names, values)) for values in gather_varlen(row, env, what=what).cpu().tolist()]


def with_checkpoint_times(gathered: GatheredEpoch, checkpoint_s: float, env, device) -> GatheredEpoch:
    """``gathered`` with every rank's own time in the checkpoint (rank 0 writing, the others waiting at its
    barrier): the one collective after the checkpoint, a float per rank, so the per-rank record agrees with
    each rank's trace."""
    times = gather_figures({"checkpoint_s": checkpoint_s}, env, device, what="checkpoint_time")
    return dataclasses.replace(gathered, ranks=[{**row, **time} for row, time in zip(gathered.ranks, times)])


def gather_epoch(trainer, phases: dict[str, float], io_counts: np.ndarray) -> GatheredEpoch:
    """The epoch's collectives, all of them and once: the weight check (a disagreement stops the run before
    the checkpoint), the I/O counters summed over ranks and every rank's figures."""
    in_sync = weights_in_sync(trainer.raw_model, trainer.env, trainer.device)
    counts = counters_to_dict(all_reduce_sum(torch.from_numpy(io_counts.copy()), trainer.env, what="io_counts"))
    ranks = gather_figures(rank_figures(trainer, phases, io_counts), trainer.env, trainer.device)
    return GatheredEpoch(counts, ranks, in_sync)


def epoch_record(
    trainer,
    epoch: int,
    wall: float,
    phases: dict[str, float],
    train: dict[str, float],
    metrics: dict[str, float],
    gathered: GatheredEpoch,
) -> dict[str, Any]:
    """The epochs.jsonl record (fields in report.REQUIRED_FIELDS and more) from what ``gather_epoch``
    returned; no collective, so it is formatted again once the checkpoint's time is known. The checkpoint
    comes after the gather: its per-rank time is this rank's, which every rank spends in it (rank 0 writing,
    the others waiting at its barrier)."""
    counts = gathered.counts
    phase_values = {p: phases.get(p, 0.0) for p in report.PHASES}
    # Before the checkpoint its time is 0 on every rank; after it, each rank's own (with_checkpoint_times).
    per_rank = [{"checkpoint_s": phase_values["checkpoint_s"], **row} for row in gathered.ranks]
    return {
        "epoch": epoch + 1,
        "wall_s": wall,
        "samples": train["samples"],
        # A resumed epoch's record covers the whole epoch, its wall time only this run part: the rate counts
        # the samples of this part (samples - samples_before_resume).
        "samples_before_resume": train.get("samples_before", 0),
        "samples_per_s": (train["samples"] - train.get("samples_before", 0)) / max(wall, 1e-9),
        "train_loss": train["train_loss"],
        **metrics,
        "lr": trainer.scheduler.get_last_lr()[0],
        "world_size": trainer.env.world_size,
        "io_mode": trainer.config.data.io_mode,
        **report.io_ratios(counts),
        **phase_values,
        "data_wait_share": phase_values["data_wait_s"] / max(wall, 1e-9),
        "io_counts": counts,
        "amp": trainer.config.train.amp,
        "compile": trainer.config.train.compile,
        "compile_backend": trainer.config.train.compile_backend if trainer.config.train.compile else None,
        "skipped_samples": counts["skipped"],
        "skipped_at_start": trainer.data.skipped_at_start,
        "nonfinite_steps": trainer.nonfinite_steps,
        "pos_weight": trainer.data.pos_weight,
        **report.rank_summary(per_rank),
        "num_workers": trainer.threads.num_workers,
        "intra_op_threads": torch.get_num_threads(),
        "tracing": tracing.is_enabled(),
        "completed": epoch + 1 == trainer.config.train.epochs,
        "config_digest": trainer.config.digest(),
        **gathered.in_sync,
    }
