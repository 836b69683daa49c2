"""A run's life under a scheduler: stop signals, agreement between ranks at a step boundary, and the
cadence and position of mid-epoch checkpoints.

SIGTERM (Slurm's time limit, scancel, preemption; flux), SIGINT (Ctrl-C) and train.stop_signal (default
SIGUSR1, what ``#SBATCH --signal=USR1@120`` sends before the limit) only set a flag. The flag travels in the
per-step collective the trainer runs anyway (the non-finite-loss check), so every rank stops after the same
step without an extra collective; the trainer then writes checkpoints/mid_epoch.pt, an epochs.jsonl marker,
syncs and releases out_dir, and ``RunStopped`` ends the command with exit code 0 (see docs/time-limits.md).
A second signal more than ``GRACE_S`` after the first exits at once (code 128 + signal).
"""

from __future__ import annotations

import logging
import os
import signal
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Optional

import numpy as np
import torch

from pecan.config.checks import signal_number
from pecan.engine.harness import JobStopped
from pecan.runtime.collectives import all_reduce

log = logging.getLogger(__name__)

# One request can arrive twice (torchrun forwards the SIGTERM the scheduler also sent each rank; Ctrl-C reaches
# torchrun and its ranks): a repeat within this many seconds is the same request, not an order to abort.
GRACE_S = 5.0
MID_EPOCH = "mid_epoch.pt"
STOP_EXIT_CODE = 0  # a clean stop: launchers treat non-zero as a failure (torchrun restarts, srun kills peers)


class RunStopped(JobStopped):
    """The run stopped on a signal after writing a checkpoint; rerunning the same command resumes it."""

    exit_code = STOP_EXIT_CODE

    def __init__(self, epoch: int, step: int, steps: int, signal_name: str) -> None:
        super().__init__(stop_line(epoch, step))
        self.epoch, self.step, self.steps, self.signal_name = epoch, step, steps, signal_name


def stop_line(epoch: int, step: int) -> str:
    """The one line a stopped run prints (1-based epoch, steps done in it)."""
    return f"stopped at epoch {epoch} step {step}; rerun the same command to resume"


def stop_record(epoch: int, step: int, steps: int, signal_name: str, after_epoch: bool = False) -> dict[str, Any]:
    """The epochs.jsonl marker of a stop (readers of epoch records skip records with an ``event``)."""
    resumes = (
        f"checkpoints/last.pt resumes at epoch {epoch + 1}"
        if after_epoch
        else f"checkpoints/{MID_EPOCH} resumes at step {step + 1}"
        if step < steps
        else f"checkpoints/{MID_EPOCH} resumes at the evaluation of epoch {epoch}"
    )
    return {
        "event": "stopped",
        "epoch": epoch,
        "step": step,
        "steps_per_epoch": steps,
        "signal": signal_name,
        # next_epoch: the epoch ended in this process; mid_epoch: a later process finishes it (and its record)
        "resumes": "next_epoch" if after_epoch else "mid_epoch",
        "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "message": f"stopped at step {step} of epoch {epoch}; {resumes}",
    }


class StopSignals:
    """Signal handlers that only note the request; ``abort`` callbacks run before an immediate exit."""

    def __init__(self, early_signal: str = "SIGUSR1") -> None:
        early = signal_number(early_signal)
        self.signals = [signal.SIGTERM, signal.SIGINT] + ([early] if early is not None else [])
        self.signum: Optional[int] = None
        self.first_at = 0.0
        self.on_abort: list[Callable[[], None]] = []
        self._previous: dict[int, Any] = {}

    @property
    def requested(self) -> bool:
        """True once a stop signal arrived."""
        return self.signum is not None

    @property
    def name(self) -> str:
        """The name of the signal that asked for the stop ('' when none did)."""
        return signal.Signals(self.signum).name if self.signum is not None else ""

    def install(self) -> "StopSignals":
        """Take over the stop signals (main thread only); ``restore`` gives them back."""
        for number in self.signals:
            self._previous[number] = signal.signal(number, self._handle)
        return self

    def restore(self) -> None:
        """Put the previous handlers back. After a stop was requested, a signal whose previous action was
        the default (terminate) is ignored instead: a second signal while the stopped run exits must not
        turn its clean stop (exit 0) into a kill by that signal."""
        for number, previous in self._previous.items():
            if self.requested and previous in (signal.SIG_DFL, None):
                previous = signal.SIG_IGN
            signal.signal(number, previous)
        self._previous.clear()

    def _handle(self, signum: int, frame) -> None:
        now = time.monotonic()
        if self.signum is None:
            self.signum, self.first_at = signum, now
            log.warning(
                "%s received: stopping after this step with a checkpoint (a second signal in more "
                "than %.0f s exits at once)",
                signal.Signals(signum).name,
                GRACE_S,
            )
            return
        if now - self.first_at < GRACE_S:
            return
        for callback in self.on_abort:
            try:
                callback()
            except Exception:  # noqa: BLE001 - exiting anyway; the lock's owner check covers what is left
                pass
        os.write(
            2,
            f"[pecan] second signal ({signal.Signals(signum).name}) while stopping: exiting now, without "
            "the stop checkpoint; rerun the same command to resume from the last one\n".encode(),
        )
        os._exit(128 + signum)


@dataclass
class Position:
    """Where a mid-epoch checkpoint resumes: 0-based epoch, steps done in it, and the epoch's totals so far
    (summed over ranks) so its record covers the whole epoch. ``done`` counts steps of ``world_size`` ranks x
    ``batch_size``; ``seen_before`` lists the epoch's parts run under another split (the sampler's
    ``continue_after``)."""

    epoch: int
    done: int
    loss_sum: float
    samples: int
    io_counts: list[int]
    world_size: int = 1
    batch_size: int = 0
    seen_before: list[tuple[int, int]] = field(default_factory=list)

    def to_state(self) -> dict[str, Any]:
        """The checkpoint's ``position`` entry (plain values: weights_only-safe)."""
        return {
            "epoch": self.epoch,
            "done": self.done,
            "loss_sum": self.loss_sum,
            "samples": self.samples,
            "io_counts": torch.tensor(self.io_counts, dtype=torch.int64),
            "world_size": self.world_size,
            "batch_size": self.batch_size,
            "seen_before": [list(part) for part in self.seen_before],
        }

    @classmethod
    def from_state(
        cls, state: Optional[dict[str, Any]], world_size: int = 1, batch_size: int = 0
    ) -> Optional["Position"]:
        """Read a checkpoint's ``position`` entry (None for an end-of-epoch checkpoint); ``world_size`` and
        ``batch_size``: the checkpoint's own, for an entry written before the position recorded them."""
        if not state:
            return None
        return cls(
            int(state["epoch"]),
            int(state["done"]),
            float(state["loss_sum"]),
            int(state["samples"]),
            [int(v) for v in state["io_counts"].tolist()],
            int(state.get("world_size", world_size)),
            int(state.get("batch_size", batch_size)),
            [(int(world), int(count)) for world, count in state.get("seen_before", [])],
        )


class Lifecycle:
    """One rank's stop and mid-epoch checkpoint decisions; every rank reaches the same ones."""

    def __init__(self, train_config, is_main: bool, distributed: bool) -> None:
        self.every_steps = train_config.checkpoint_every_steps
        self.every_s = train_config.checkpoint_every_minutes * 60.0
        self.is_main, self.distributed = is_main, distributed
        self.signals: Optional[StopSignals] = None
        self.last_checkpoint = time.monotonic()
        self.agreed_stop = self.agreed_due = False

    def attach(self, signals: Optional[StopSignals]) -> None:
        """Listen to installed stop signals."""
        self.signals = signals

    def local_flags(self) -> list[int]:
        """This rank's [stop requested, minutes checkpoint due] (only rank 0's clock counts)."""
        stop = int(self.signals is not None and self.signals.requested)
        due = int(self.is_main and self.every_s > 0 and time.monotonic() - self.last_checkpoint >= self.every_s)
        return [stop, due]

    def agree(self, flags: torch.Tensor) -> None:
        """Take the max over ranks of ``local_flags`` (reduced by the caller's collective)."""
        values = flags.tolist()
        self.agreed_stop, self.agreed_due = bool(values[0]), bool(values[1])

    def step_checks(self, finite: torch.Tensor) -> bool:
        """The per-step collective: non-finite loss on any rank, a stop, a checkpoint due; True when finite
        everywhere. One all_reduce of three integers, the host sync the finite check always had."""
        flags = torch.tensor([0, *self.local_flags()], dtype=torch.int32, device=finite.device)
        flags[0] = 1 - finite.reshape(())
        values = all_reduce(flags, "max", what="step_flags").tolist()  # the step's one host sync
        self.agreed_stop, self.agreed_due = bool(values[1]), bool(values[2])
        return not values[0]

    def after_step(self, done: int) -> Optional[str]:
        """What the trainer does after ``done`` steps of the epoch: 'stop', 'checkpoint' or None."""
        if not self.distributed:
            self.agree(torch.tensor(self.local_flags()))
        if self.agreed_stop:
            return "stop"
        if self.agreed_due or (self.every_steps and done % self.every_steps == 0):
            self.agreed_due = False
            return "checkpoint"
        return None

    def stop_agreed_now(self) -> bool:
        """Outside the step loop (after an epoch): one tiny all_reduce of the stop flag."""
        flag = torch.tensor([self.local_flags()[0]], dtype=torch.int32)
        if self.distributed and torch.distributed.get_backend() == "nccl":
            flag = flag.cuda()
        return bool(all_reduce(flag, "max", what="stop_flag").item())

    def checkpoint_written(self) -> None:
        """Restart the minutes clock."""
        self.last_checkpoint = time.monotonic()


def carried_totals(
    position: Optional[Position], epoch: int, is_main: bool, device, width: int
) -> tuple[int, torch.Tensor, int, np.ndarray]:
    """Resuming inside ``epoch``: (steps to skip, loss sum, samples, io counts) so the epoch's totals include
    the steps before the stop (rank 0 carries them; the others start at zero, the sum over ranks is right)."""
    loss_sum = torch.zeros((), dtype=torch.float64, device=device)
    counts = np.zeros(width, dtype=np.int64)
    if position is None or position.epoch != epoch:
        return 0, loss_sum, 0, counts
    if not is_main:
        return position.done, loss_sum, 0, counts
    counts[: len(position.io_counts)] = position.io_counts[:width]
    return position.done, loss_sum + position.loss_sum, position.samples, counts
