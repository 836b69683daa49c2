"""Resuming a run and writing what a stop leaves: the trainer's checkpoint restore (end-of-epoch and
mid-epoch), checkpoints/mid_epoch.pt, and the stop marker in epochs.jsonl."""

from __future__ import annotations

import dataclasses
import logging
from typing import Any, Optional

import numpy as np
import torch

from pecan import config as config_module
from pecan.engine.distributed import all_reduce_sum, barrier
from pecan.engine.state import CheckpointState
from pecan.runtime import tracing
from pecan.train import checkpoint as ckpt
from pecan.train.lifecycle import MID_EPOCH, Position, RunStopped, carried_totals, stop_record

log = logging.getLogger(__name__)


def maybe_resume(trainer) -> Optional[str]:
    """Load train.resume's checkpoint (auto: the newest intact one) into ``trainer``: model, optimiser,
    schedule, RNG, records and, for a mid-epoch checkpoint, the position in the epoch (its
    ``load_state_dict``). Returns the checkpoint's path, or None when the run starts fresh."""
    try:
        path, state = ckpt.choose_resume(
            trainer.config.train.resume, trainer.out_dir, warn=False, map_location=trainer.device
        )
    except ValueError as err:
        raise config_module.ConfigError(f"train.resume: {err}") from err
    if path is None:
        if trainer.env.is_main:
            setting = trainer.config.train.resume
            why = "train.resume is never" if setting == "never" else f"train.resume is {setting}: no checkpoint"
            trainer.files.set_aside_earlier(why)
        return None
    try:
        trainer.load_state_dict(state)
    except (RuntimeError, KeyError, ValueError) as err:
        raise config_module.ConfigError(f"train.resume: checkpoint {path} does not fit this run: {err}") from err
    schedule_note, trainer.resume_details = fit_schedule(trainer, state)
    batch = global_batch_change(state, trainer)
    if batch is not None:
        trainer.resume_details["global_batch"] = batch
    main = trainer.env.is_main
    if main:
        ckpt.warn_changed_settings(state, trainer.config, path)
        warn_changed_data(state, trainer.data.train_index, path)
        if batch is not None:
            warn_global_batch(batch, path, trainer.config.train.lr)
        at = f", step {trainer.position.done} of epoch {trainer.position.epoch + 1}" if trainer.position else ""
        log.info("resumed from %s after epoch %d%s; learning rate: %s", path, trainer.start_epoch, at, schedule_note)
        trainer.files.restore_missing(trainer.records, trainer.start_epoch)
    return str(path)


def steps_left(trainer) -> int:
    """Optimizer steps this run still takes: the epochs left, less the part of a mid-epoch checkpoint's epoch
    already trained (in this run's steps, when the checkpoint's ranks or batch differ)."""
    steps = trainer.steps_per_epoch()
    done = 0.0
    position = trainer.position
    if position is not None and position.epoch == trainer.start_epoch:
        written = position.done * position.batch_size * position.world_size
        done = min(written / (trainer.config.data.batch_size * trainer.env.world_size), steps)
    return max((trainer.config.train.epochs - trainer.start_epoch) * steps - round(done), 0)


def fit_schedule(trainer, state: CheckpointState) -> tuple[str, dict[str, Any]]:
    """Fit the restored learning-rate schedule to this run's length; returns what the resume line says and
    what runs.jsonl records (``resume``: schedule same, continue or restart, its steps then and now, the rate).

    The same length: the checkpoint's schedule, step for step. Another length (train.epochs changed, or the
    steps per epoch under another world size or batch): train.schedule_on_resume decides, continue (from the
    factor reached, annealed to the floor over the steps left) or restart (a warm restart). A checkpoint
    written before its schedule travelled with it is taken to have run train.epochs of its saved config."""
    scheduler = trainer.scheduler
    schedule, step = scheduler.lr_lambdas[0], int(scheduler.last_epoch)
    saved = (state.require("scheduler").get("lr_lambdas") or [None])[0]
    if saved is None:
        saved_epochs = int(state.saved_section("train").get("epochs", trainer.config.train.epochs))
        schedule = dataclasses.replace(schedule, total_steps=saved_epochs * trainer.steps_per_epoch())
        scheduler.lr_lambdas[0] = schedule
    total = step + steps_left(trainer)
    details = {"at_step": step, "steps_before": schedule.total_steps, "steps": total}
    if schedule.total_steps == total:
        rate = scheduler.get_last_lr()[0]
        return f"the checkpoint's schedule continues ({rate:.3g} now)", {"schedule": "same", **details, "lr": rate}
    restart = trainer.config.train.schedule_on_resume == "restart"
    fitted = schedule.extended(step, total, restart)
    scheduler.lr_lambdas[0] = fitted
    rates = [base * fitted(step) for base in scheduler.base_lrs]
    for group, rate in zip(trainer.optimizer.param_groups, rates):
        group["lr"] = rate
    scheduler._last_lr = rates
    details = {"schedule": "restart" if restart else "continue", **details, "lr": rates[0]}
    length = f"the run now ends after {total} steps, not {schedule.total_steps}"
    if restart:
        return (
            f"{length}: warm restart (train.schedule_on_resume: restart), {rates[0]:.3g} now, up to "
            f"{scheduler.base_lrs[0]:.3g} and down to the floor over the {total - step} steps left"
        ), details
    return (
        f"{length}: continued from {rates[0]:.3g} (train.schedule_on_resume: continue), annealed to "
        f"{fitted.floor * scheduler.base_lrs[0]:.3g} over the {total - step} steps left"
    ), details


def global_batch_change(state: CheckpointState, trainer) -> Optional[dict[str, int]]:
    """The global batch (ranks x batch per rank) of the checkpoint's run and of this one, where they differ."""
    ranks_then = int(state.world_size or 1)
    batch_then = int(state.saved_section("data").get("batch_size", trainer.config.data.batch_size))
    ranks_now, batch_now = trainer.env.world_size, trainer.config.data.batch_size
    if ranks_then * batch_then == ranks_now * batch_now:
        return None
    return {
        "before": ranks_then * batch_then,
        "ranks_before": ranks_then,
        "batch_size_before": batch_then,
        "now": ranks_now * batch_now,
        "ranks": ranks_now,
        "batch_size": batch_now,
    }


def warn_global_batch(batch: dict[str, int], path, lr: float) -> None:
    """One warning when the global batch differs from the checkpoint's run: the steps per epoch change with
    it, and train.lr is not scaled."""
    log.warning(
        "checkpoint %s was trained with a global batch of %d (%d rank(s) x batch %d); this run's is %d (%d "
        "rank(s) x batch %d): each optimizer step now averages over %s samples, the steps per epoch change with "
        "it, and train.lr (%g) is not scaled (recorded in runs.jsonl: resume.global_batch)",
        path,
        batch["before"],
        batch["ranks_before"],
        batch["batch_size_before"],
        batch["now"],
        batch["ranks"],
        batch["batch_size"],
        "more" if batch["now"] > batch["before"] else "fewer",
        lr,
    )


def warn_changed_data(state: CheckpointState, train_index, path) -> None:
    """One warning when the training index (complex, pose, label of every row) is not the one the checkpoint
    trained on: labels flipped or rmsd values changed in place, poses added or removed since."""
    from pecan.engine.pins import index_digest

    record = state.training_data or {}
    recorded = record.get("index_digest")
    if not recorded:
        return  # a checkpoint written before the record existed
    now = index_digest(train_index)
    if now != recorded:
        before = record.get("poses", "?")
        log.warning(
            "the training data changed since checkpoint %s was written (index digest %s, %s poses -> %s, %d "
            "poses): labels, rmsd values or poses changed in place; the resumed run trains on the data as it is now",
            path,
            recorded,
            before,
            now,
            len(train_index),
        )


def enter_epoch(trainer, epoch: int, width: int) -> tuple[int, torch.Tensor, int, np.ndarray, int]:
    """Start ``epoch`` where a mid-epoch checkpoint left it: (steps to skip, loss sum, samples, io counts of
    ``width`` counters, samples before the stop). Under the split the checkpoint was written with, the sampler
    skips the steps done; under another world size or batch size, what is left of the epoch is split anew."""
    position, trainer.position = trainer.position, None
    if position is not None and position.epoch == epoch:
        if (position.world_size, position.batch_size) == (trainer.env.world_size, trainer.config.data.batch_size):
            trainer.data.train_sampler.continue_after(position.seen_before)
        else:
            position = resplit(trainer, position)
    skip, loss_sum, samples, carried = carried_totals(position, epoch, trainer.env.is_main, trainer.device, width)
    trainer.data.train_sampler.skip_next(skip * trainer.config.data.batch_size)
    before = position.samples if position is not None and position.epoch == epoch else 0
    return skip, loss_sum, samples, carried, before


def resplit(trainer, position: Position) -> Optional[Position]:
    """A checkpoint written by another number of ranks (or another batch size) resumes with the samples of
    its epoch no rank has seen, split over this run's ranks; under train.max_steps_per_epoch (each rank's
    share cut short, so "not yet seen" has no meaning under another split) the epoch restarts. Logs which."""
    env, batch_size = trainer.env, trainer.config.data.batch_size
    written = f"{position.world_size} rank(s) x batch {position.batch_size}"
    now = f"{env.world_size} rank(s) x batch {batch_size}"
    if trainer.config.train.max_steps_per_epoch:
        if env.is_main:
            log.warning(
                "the mid-epoch checkpoint was written by %s, this run has %s: restarting epoch %d from its first "
                "step (train.max_steps_per_epoch cuts each rank's share, so the samples not yet seen cannot be "
                "split anew); the %d samples trained before the stop are trained again",
                written,
                now,
                position.epoch + 1,
                position.samples,
            )
        return None
    seen = [*position.seen_before, (position.world_size, position.done * position.batch_size)]
    trainer.data.train_sampler.continue_after(seen)
    if env.is_main:
        log.warning(
            "the mid-epoch checkpoint was written by %s, this run has %s: continuing epoch %d with the %d "
            "samples not yet seen (of %d), split over this run's ranks",
            written,
            now,
            position.epoch + 1,
            trainer.data.train_sampler.remaining_size(),
            trainer.data.train_sampler.epoch_size,
        )
    return dataclasses.replace(position, done=0, world_size=env.world_size, batch_size=batch_size, seen_before=seen)


def save_position(trainer, epoch: int, done: int, loss_sum: float, samples: int, io_counts: np.ndarray) -> None:
    """checkpoints/mid_epoch.pt: resumes at the next step, with the epoch's totals so far over all ranks."""
    env, device = trainer.env, trainer.device
    position = Position(
        epoch,
        done,
        loss_sum,
        samples,
        io_counts.tolist(),
        env.world_size,
        trainer.config.data.batch_size,
        trainer.data.train_sampler.seen_before,
    )
    totals = all_reduce_sum(
        torch.tensor([position.loss_sum, position.samples], dtype=torch.float64, device=device), env, what="position"
    ).tolist()
    counts = all_reduce_sum(torch.tensor(position.io_counts, device=device), env, what="position_io")
    position.loss_sum, position.samples, position.io_counts = totals[0], int(totals[1]), counts.tolist()
    if env.is_main:
        with tracing.span("checkpoint", "capture", what="mid_epoch"):
            state = dataclasses.replace(trainer.checkpoint_state(), position=position.to_state())
            state.save(trainer.out_dir / "checkpoints" / MID_EPOCH)
    barrier("checkpoint")
    trainer.lifecycle.checkpoint_written()


def stop(trainer, epoch: int, done: int, after_epoch: bool = False) -> None:
    """After the stop's checkpoint: the epochs.jsonl marker, then RunStopped (the command exits cleanly)."""
    signals = trainer.lifecycle.signals
    name = signals.name if signals is not None else ""
    steps = trainer.steps_per_epoch()
    if trainer.env.is_main:
        trainer.files.append_epoch(stop_record(epoch + 1, done, steps, name, after_epoch))
    raise RunStopped(epoch + 1, done, steps, name)
