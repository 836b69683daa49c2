"""What rank 0 shows while a run trains: the epoch's progress (bar or lines) with the epoch's and the run's
ETA, the epoch report (full or compact), the CPU-share warning and the TensorBoard scalars. The trainer
calls it once per epoch and once per step; the formatting itself lives in ``pecan.report``."""

from __future__ import annotations

import logging
import math
import statistics
from pathlib import Path
from typing import Any

import torch

from pecan import report
from pecan.runtime import progress
from pecan.train.threads import CpuClock, starved_advice

log = logging.getLogger(__name__)


class EpochProgress:
    """One epoch's progress: counts steps, and when a line (or a TensorBoard point) is due, reads the
    running loss sum; the loss is read from the device only then, never per step."""

    def __init__(self, reporter: "EpochReporter", epoch: int, steps: int, optimizer, before: int = 0) -> None:
        self.reporter, self.epoch, self.optimizer = reporter, epoch, optimizer
        self.samples, self.loss_sum = 0, None
        self.before = before  # samples of this epoch before a mid-epoch resume: not in this part's rate
        self.window = (0.0, 0)  # loss sum and samples at the last TensorBoard point
        train = reporter.config.train
        self.progress = progress.Progress(
            steps,
            f"epoch {epoch + 1}/{train.epochs}",
            "step",
            reporter.mode,
            train.progress_every_seconds,
            extra=self.extra,
            close_line=False,
        )

    def update(self, samples: int, loss_sum: torch.Tensor) -> None:
        """One step done; ``samples`` and ``loss_sum`` are the epoch's running totals."""
        self.samples, self.loss_sum = samples, loss_sum
        self.progress.update()
        self.reporter.step_done(self)

    def mean_loss(self) -> float:
        """The epoch's training loss so far (one host read)."""
        return float(self.loss_sum) / self.samples if self.samples and self.loss_sum is not None else math.nan

    def extra(self, bar: progress.Progress) -> str:
        """samples/s, the running loss and the run's ETA, for a progress line."""
        rate = max(self.samples - self.before, 0) / max(bar.elapsed(), 1e-9)
        run_eta = self.reporter.run_eta(self.epoch, bar)
        return f" | {rate:.1f} samples/s | loss {self.mean_loss():.4f} | ETA run {progress.format_duration(run_eta)}"

    def close(self) -> None:
        """End of the epoch's training steps."""
        self.progress.close()


class _NoBoard:
    """TensorBoard without the package: every write is a no-op (the warning was logged once)."""

    def epoch(self, record) -> None:
        pass

    def step(self, step, loss, lr) -> None:
        pass

    def hparams(self, config, record) -> None:
        pass

    def close(self) -> None:
        pass


class EpochReporter:
    """Rank 0's view of the run as it goes (other ranks build one too and it stays silent)."""

    def __init__(self, config, env, out_dir: Path, device: torch.device | None = None) -> None:
        self.config, self.env, self.out_dir = config, env, Path(out_dir)
        # On an accelerator the host mostly waits for the device: its CPU share says nothing about cores.
        self.judge_cpu = device is None or device.type == "cpu"
        self.mode = progress.resolve_mode(config.train.progress) if env.is_main else "off"
        self.cpu = CpuClock()
        self.epoch_walls: list[float] = []
        self.step = 0
        self.board = None

    def epoch_progress(self, epoch: int, steps: int, optimizer, step: int = 0, before: int = 0) -> EpochProgress:
        """Start an epoch (its CPU clock too) and return its progress; ``before``: the samples this epoch
        trained before a mid-epoch resume (rank 0 carries them in its running total)."""
        self.cpu.start()
        self.step = step
        return EpochProgress(self, epoch, steps, optimizer, before)

    def cpu_share(self) -> float:
        """This rank's CPU share since the epoch started (NaN on an accelerator: not judged there)."""
        return self.cpu.share() if self.judge_cpu else math.nan

    def run_eta(self, epoch: int, bar: progress.Progress) -> float:
        """Seconds left in the run: this epoch's rest, then the remaining epochs at the mean epoch wall of
        this start (or, before one finished, this epoch's training pace)."""
        left = self.config.train.epochs - epoch - 1
        per_epoch = (
            statistics.fmean(self.epoch_walls)
            if self.epoch_walls
            else bar.elapsed() / max(bar.done, 1) * (bar.total or 0)
        )
        return bar.eta() + left * per_epoch

    def step_done(self, epoch_progress: EpochProgress) -> None:
        """Per-step TensorBoard loss (mean over the last steps) and learning rate, every N steps."""
        self.step += 1
        train = self.config.train
        if not (train.tensorboard and self.env.is_main) or self.step % train.tensorboard_every_steps:
            return
        total, samples = float(epoch_progress.loss_sum or 0.0), epoch_progress.samples
        old_total, old_samples = epoch_progress.window
        if old_samples > samples:
            old_total, old_samples = 0.0, 0
        epoch_progress.window = (total, samples)
        loss = (total - old_total) / (samples - old_samples) if samples > old_samples else math.nan
        self.tensorboard().step(self.step, loss, epoch_progress.optimizer.param_groups[0]["lr"])

    def tensorboard(self):
        """The run's TensorBoard writer, opened on first use."""
        if self.board is None:
            from pecan.plots import TensorBoard

            try:
                self.board = TensorBoard(self.out_dir / "tensorboard")
            except ImportError as err:  # an optional extra costs one warning, never the run
                log.warning("train.tensorboard is on but tensorboard is missing (pip install '.[plots]'): %s", err)
                self.board = _NoBoard()
        return self.board

    def run_eta_after(self, record: dict[str, Any]) -> float:
        """Seconds left after the epoch ``record`` describes."""
        return statistics.fmean(self.epoch_walls) * (self.config.train.epochs - record["epoch"])

    def epoch_end(self, record: dict[str, Any]) -> None:
        """Print the epoch report in the configured form, warn when a rank was starved of CPU, and write
        the TensorBoard scalars (and at the run's end its hparams); another rank logs its own line."""
        self.epoch_walls.append(record["wall_s"])
        if not self.env.is_main:
            log.info("%s", report.rank_line(record, self.env.rank))
            return
        eta = self.run_eta_after(record)
        advice = starved_advice(record)
        if self.config.train.report == "compact":
            print(report.compact_line(record, self.config.train.epochs, eta), flush=True)
        else:
            print(report.epoch_line(record) + f" | ETA run {progress.format_duration(eta)}", flush=True)
            print(report.wall_time_table(record), flush=True)
        if advice:
            log.warning("%s", advice)
        if self.config.train.tensorboard:
            self.tensorboard().epoch(record)
            if record.get("completed"):
                self.tensorboard().hparams(self.config, record)
                self.close()

    def close(self) -> None:
        """Flush and close the TensorBoard writer."""
        if self.board is not None:
            self.board.close()
            self.board = None
