"""The training loop: data, model, AMP, compile, DDP, evaluation, checkpoints and epoch reports. A trainer is
built from values (``build.TrainData``, ``build.ModelParts``, the optimiser); ``Trainer.from_config`` builds
them in a start's order. The epoch record is records.py's."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import math
import time
from pathlib import Path
from typing import Any, Optional

import numpy as np
import torch
import torch.nn.functional as F

from pecan import config as config_module
from pecan.config import Config
from pecan.data import layout
from pecan.data.index import DataError
from pecan.data.loader import first_good_batch
from pecan.data.sample import COUNTER_FIELDS
from pecan.engine.amp import amp_context
from pecan.engine.distributed import DistEnv, ThreadPlan, all_reduce_sum, barrier, gather_varlen
from pecan.engine.evaluate import score_share
from pecan.engine.pins import sample_settings, split_record, training_data_record
from pecan.engine.state import CheckpointState
from pecan.runtime import tracing
from pecan.runtime.collectives import guarded
from pecan.runtime.fileio import json_text, named_write_errors
from pecan.train import build, nonfinite, resume
from pecan.train import checkpoint as ckpt
from pecan.train.build import ModelParts, TrainData
from pecan.train.components import check_same_config, seed_everything
from pecan.train.display import EpochReporter
from pecan.train.fit_check import FitCheck
from pecan.train.lifecycle import Lifecycle, Position, StopSignals
from pecan.train.metrics import BestSelector, classification_report
from pecan.train.ranking import RankingLoss
from pecan.train.records import RunFiles, epoch_record, gather_epoch, run_info, with_checkpoint_times
from pecan.train.run_dir import RunLock, claim_out_dir
from pecan.train.sync import OutputSync
from pecan.train.threads import after_epoch, size_threads
from pecan.train.timing import PhaseTimer, timed_backward, timed_fetch

log = logging.getLogger(__name__)


# ---------------------------------------------------------------------------- the trainer


class Trainer:
    """Owns one rank's share of a run: built from values (``from_config`` builds them), then ``fit``."""

    def __init__(
        self,
        config: Config,
        env: DistEnv,
        device: torch.device,
        data: TrainData,
        parts: ModelParts,
        optimizer: torch.optim.Optimizer,
        scheduler: torch.optim.lr_scheduler.LRScheduler,
        *,
        threads: ThreadPlan,
        reporter: Optional[EpochReporter] = None,
        lifecycle: Optional[Lifecycle] = None,
        lock: Optional[RunLock] = None,
        output_sync: Optional[OutputSync] = None,
    ) -> None:
        self.config, self.env, self.device = config, env, device
        self.out_dir = Path(config.train.out_dir)
        self.files = RunFiles(self.out_dir)
        self.threads = threads
        self.reporter = reporter if reporter is not None else EpochReporter(config, env, self.out_dir, device)
        self.show_progress = self.reporter.mode
        self.lifecycle = (
            lifecycle if lifecycle is not None else Lifecycle(config.train, env.is_main, env.is_distributed)
        )
        self.data = data  # build.TrainData: the indexes, datasets, samplers, loaders, staging, pos_weight
        # The model (build.ModelParts) and its optimiser.
        self.raw_model, self.model, self.eval_model = parts.raw_model, parts.model, parts.eval_model
        self.grad_clock = parts.grad_clock
        self.optimizer, self.scheduler = optimizer, scheduler
        # What close() releases: the out_dir lock (rank 0) and the output sync (local rank 0, train.sync_dir).
        self.lock, self.output_sync = lock, output_sync
        # Where the run is: a resume (maybe_resume, load_state_dict) restores these.
        self.start_epoch, self.step, self.best_auc = 0, 0, -math.inf
        self.epochs_done, self.last_metrics = 0, {}
        self.selector = BestSelector(config.train.select_on)
        self.records: list[dict[str, Any]] = []  # every epoch record so far; checkpoints carry them
        self.position: Optional[Position] = None  # where a mid-epoch checkpoint resumes
        self.resumed_from: Optional[str] = None  # the checkpoint this start resumed from
        self.resume_details: Optional[dict[str, Any]] = None  # runs.jsonl's resume: schedule, global batch
        self.nonfinite_steps = 0
        self.last_batch = None  # the last good batch, replayed by a rank whose batch was all bad
        self._training_data: Optional[dict[str, Any]] = None  # training_data(), computed once
        self.loss = RankingLoss.from_config(config.train, self.data.train_set, device)  # BCE + the ranking loss
        self.fit_check = FitCheck.from_config(config, self.data.train_set, device)  # fit_* of each epoch record

    # ------------------------------------------------------------------ build

    @classmethod
    def from_config(
        cls,
        config: Config,
        env: DistEnv,
        device: torch.device,
        force_unlock: bool = False,
        signals: Optional[StopSignals] = None,
    ) -> "Trainer":
        """Start a run, in this order: the ranks' configs compared, out_dir locked, seeds, threads, the output
        sync, data, model, optimiser, resume (train.resume), then config.yaml and runs.jsonl. ``signals``
        (installed before) reach the lifecycle and release the lock on an immediate exit. A start that
        fails releases what it took (loader workers, the sync, the lock) before the error goes on."""
        train, out_dir = config.train, Path(config.train.out_dir)
        lifecycle = Lifecycle(train, env.is_main, env.is_distributed)
        lifecycle.attach(signals)
        check_same_config(config, env)  # before the lock: a refused start writes nothing
        with contextlib.ExitStack() as undo:
            lock = claim_out_dir(out_dir, env.is_main, train.lock_stale_minutes, force_unlock)
            if lock is not None:
                undo.callback(lock.release)
                if signals is not None:
                    signals.on_abort.append(lock.release)
            seed_everything(train.seed, train.deterministic)
            threads = size_threads(config, env)
            output_sync = None
            if train.sync_dir and env.local_rank == 0:
                output_sync = OutputSync(out_dir, Path(train.sync_dir), train.sync_every_minutes).start()
                undo.callback(output_sync.close)
            reporter = EpochReporter(config, env, out_dir, device)
            data = build.build_data(config, env, threads.num_workers, device, reporter.mode)
            undo.callback(data.close)
            with tracing.span("pecan.setup", "model"):
                parts = build.build_model(config, env, device)
            steps = build.steps_per_epoch(data.train_loader, train)
            optimizer, scheduler = build.build_optimizer(parts.raw_model, train, steps)
            trainer = cls(
                config,
                env,
                device,
                data,
                parts,
                optimizer,
                scheduler,
                threads=threads,
                reporter=reporter,
                lifecycle=lifecycle,
                lock=lock,
                output_sync=output_sync,
            )
            undo.pop_all()
            undo.callback(trainer.close)
            with tracing.span("checkpoint", "restart"):
                trainer.maybe_resume()
            trainer.record_start()
            undo.pop_all()
        return trainer

    def record_start(self) -> None:
        """Rank 0 writes config.yaml and this start's runs.jsonl line. Only a start that succeeded replaces
        config.yaml: it must agree with the checkpoints."""
        if not self.env.is_main:
            return
        with named_write_errors(self.out_dir / "config.yaml"):
            config_module.save(self.config, self.out_dir / "config.yaml")
        self.files.append_run(
            run_info(
                self.config,
                self.env,
                self.device,
                self.threads,
                self.resumed_from,
                self.start_epoch,
                self.resume_details,
            )
        )

    def steps_per_epoch(self) -> int:
        """Optimizer steps in one epoch on every rank."""
        return build.steps_per_epoch(self.data.train_loader, self.config.train)

    def checkpoint_state(self) -> CheckpointState:
        """Everything a checkpoint holds (save and resume; its entries are defined in pecan.engine.state)."""
        return CheckpointState(
            model=ckpt.clean_state_dict(self.raw_model.state_dict()),
            optimizer=self.optimizer.state_dict(),
            scheduler=self.scheduler.state_dict(),
            epoch=self.epochs_done,
            step=self.step,
            best_auc=self.best_auc,
            rng=ckpt.rng_state(),
            config_digest=self.config.digest(),
            config=self.config.to_dict(),
            world_size=self.env.world_size,
            model_config=dataclasses.asdict(self.config.model),
            feature_layout=layout.feature_layout(),
            # What scoring needs to build samples as trained and to tell seen from held-out complexes.
            sample_settings=sample_settings(self.config),
            best=self.selector.state(),
            complexes=split_record(self.data.train_index, self.data.val_index),
            training_data=self.training_data(),
            metrics={k: float(v) for k, v in self.last_metrics.items()},
            # The epoch records travel with the checkpoint that claims their epochs (JSON: weights_only-safe).
            records=json_text(self.records, default=float),
        )

    def training_data(self) -> dict[str, Any]:
        """What this run trains on (synthetic or real, index digest, docking-score property), computed once."""
        if self._training_data is None:
            self._training_data = training_data_record(self.config, self.data.train_index)
        return self._training_data

    def load_state_dict(self, state: CheckpointState) -> None:
        """Restore what ``checkpoint_state`` saved (KeyError naming an entry a resumable checkpoint lacks)."""
        self.raw_model.load_state_dict(ckpt.clean_state_dict(state.model))
        self.optimizer.load_state_dict(state.require("optimizer"))
        self.scheduler.load_state_dict(state.require("scheduler"))
        ckpt.set_rng_state(state.require("rng"))
        self.start_epoch, self.step = int(state.require("epoch")), int(state.require("step"))
        self.epochs_done = self.start_epoch
        self.best_auc = float(state.require("best_auc"))
        self.selector.load(state.best, self.best_auc)
        batch_size = state.saved_section("data").get("batch_size", self.config.data.batch_size)
        self.position = Position.from_state(state.position, int(state.world_size or 1), batch_size)
        self.records = json.loads(state.records) if state.records is not None else []

    def maybe_resume(self) -> None:
        """Continue from a checkpoint (train.resume) with model, optimiser, schedule, RNG state and records."""
        self.resumed_from = resume.maybe_resume(self)

    # ------------------------------------------------------------------ loop

    def fit(self) -> list[dict[str, Any]]:
        """Train the remaining epochs; returns this call's epoch records."""
        records = []
        for epoch in range(self.start_epoch, self.config.train.epochs):
            tracing.set_context(epoch=epoch + 1, step=self.step)
            with tracing.span("pipeline", "epoch"):
                records.append(self.run_epoch(epoch))
            if epoch + 1 < self.config.train.epochs and self.lifecycle.stop_agreed_now():
                resume.stop(self, epoch, self.steps_per_epoch(), after_epoch=True)  # came during evaluation
        if self.env.is_main and records:
            self.files.write_summary(self.config.train.plots)
        return records

    def run_epoch(self, epoch: int) -> dict[str, Any]:
        """Train, evaluate, checkpoint and report one epoch."""
        start = time.perf_counter()
        timer = PhaseTimer(self.device)
        io_counts = np.zeros(len(COUNTER_FIELDS), dtype=np.int64)
        with tracing.span("pipeline", "train"):
            train = self.train_epoch(epoch, timer, io_counts)
        with timer.span("eval_s"):
            metrics = self.evaluate(io_counts)
            if self.env.is_main and self.fit_check.due(epoch + 1, self.config.train.epochs):
                metrics.update(self.fit_check(self.scoring_model()))  # every rank would find the same
        gathered = gather_epoch(self, timer.totals(), io_counts)  # the epoch's collectives, once
        self.epochs_done, self.last_metrics = epoch + 1, metrics
        # The record is complete but for the checkpoint's own time; the checkpoint carries it, so an epoch it
        # claims never lacks its record (resume restores a record the kill below would lose).
        self.records.append(
            epoch_record(self, epoch, time.perf_counter() - start, timer.totals(), train, metrics, gathered)
        )
        with timer.span("checkpoint_s"):
            self.save_checkpoints(metrics)
        gathered = with_checkpoint_times(gathered, timer.totals()["checkpoint_s"], self.env, self.device)
        record = epoch_record(self, epoch, time.perf_counter() - start, timer.totals(), train, metrics, gathered)
        if self.data.staging is not None and epoch == self.start_epoch:
            record.update(self.data.staging.record())
        self.records[-1] = record
        if self.env.is_main:
            self.files.append_epoch(record)
        self.reporter.epoch_end(record)
        self.threads = after_epoch(self.threads, record, self.config.train.deterministic, self.env.is_main)
        return record

    def train_epoch(self, epoch: int, timer: PhaseTimer, io_counts: np.ndarray) -> dict[str, float]:
        """One pass over this rank's share of the training data."""
        self.model.train()
        self.data.train_sampler.set_epoch(epoch)
        # A mid-epoch resume: the steps to skip and the epoch's totals before the stop (all ranks'); the rate
        # counts only the samples this run part processed (``before``: those it did not), over its wall time.
        skip, loss_sum, samples, carried, before = resume.enter_epoch(self, epoch, len(COUNTER_FIELDS))
        io_counts += carried
        steps = self.steps_per_epoch()
        batches = timed_fetch(self.data.train_loader, timer) if skip < steps else iter(())
        bar = self.reporter.epoch_progress(epoch, steps - skip, self.optimizer, self.step, samples)
        for step_in_epoch, (batch, counts) in enumerate(batches, start=skip):
            tracing.set_context(step=self.step)
            io_counts += counts
            if batch.num_graphs:
                self.last_batch = batch
                loss = self.train_step(batch, timer, where=(epoch, step_in_epoch))
                if loss is not None:
                    loss_sum += loss.double() * batch.num_graphs
                    samples += batch.num_graphs
            elif self.env.is_distributed:
                self.keep_in_step(timer, (epoch, step_in_epoch))
            bar.update(samples, loss_sum)
            action = self.lifecycle.after_step(step_in_epoch + 1)
            if action == "stop" or (action and step_in_epoch + 1 < steps):
                resume.save_position(self, epoch, step_in_epoch + 1, float(loss_sum), samples, io_counts)
            if action == "stop":
                bar.close()
                resume.stop(self, epoch, step_in_epoch + 1)
            if step_in_epoch + 1 >= steps:
                break
        bar.close()
        totals = all_reduce_sum(
            torch.stack([loss_sum, torch.tensor(float(samples), dtype=torch.float64, device=self.device)]),
            self.env,
            what="train_loss",
        ).tolist()
        return {"train_loss": totals[0] / max(totals[1], 1), "samples": int(totals[1]), "samples_before": before}

    def keep_in_step(self, timer: PhaseTimer, where: tuple[int, int] = (0, 0)) -> None:
        """Every sample of this rank's batch was skipped as bad: replay the previous batch with zero weight,
        because DDP ranks that skip a step leave the others waiting in the gradient all-reduce forever."""
        if self.last_batch is None:
            self.last_batch = self.first_good_sample()
        log.warning(
            "rank %d: a whole batch was skipped as bad; replaying the previous batch with zero weight", self.env.rank
        )
        self.train_step(self.last_batch, timer, weight=0.0, where=where)

    def first_good_sample(self):
        """The first readable training sample, as a one-graph batch (for a replay before any good batch)."""
        batch = first_good_batch(self.data.train_set)
        if batch is None:
            raise DataError("every training sample is bad; nothing to train on")
        return batch

    def train_step(
        self, batch, timer: PhaseTimer, weight: float = 1.0, where: tuple[int, int] = (0, 0)
    ) -> Optional[torch.Tensor]:
        """Forward, backward and optimiser step on one batch (``where``: epoch and step, for messages);
        returns the detached loss, or None when a non-finite loss was skipped (train.on_nonfinite_loss: skip).
        Every rank checks every step, replayed ones included, so the check's collective stays paired."""
        with timer.span("transfer_s", size=batch.num_graphs):
            batch = batch.to(self.device, non_blocking=True)
        with timer.span("forward_s", size=batch.num_graphs):
            loss = self.forward_loss(batch)
        if not self.loss_is_finite(loss, *where, batch=batch):
            self.optimizer.zero_grad(set_to_none=True)
            return None
        self.backward(loss * weight, timer)
        with timer.span("optimizer_s"):
            if self.config.train.grad_clip > 0:
                torch.nn.utils.clip_grad_norm_(self.raw_model.parameters(), self.config.train.grad_clip)
            self.optimizer.step()
            self.scheduler.step()
            self.optimizer.zero_grad(set_to_none=True)
        self.step += 1
        return loss.detach()

    def loss_is_finite(self, loss: torch.Tensor, epoch: int, step_in_epoch: int, batch=None) -> bool:
        """Stop (or count and skip) on a NaN/inf loss before it reaches the weights, naming the batch's poses.
        This is one host sync per step, the price of never stepping the optimiser with a NaN gradient; ranks
        agree, so DDP stays in step."""
        # The same collective carries the stop and checkpoint-due flags: ranks agree on them for free.
        if self.lifecycle.step_checks(torch.isfinite(loss.detach()).to(torch.int32)):
            return True
        where = f"epoch {epoch + 1}, step {step_in_epoch + 1} (global step {self.step + 1})"
        poses = self.data.train_set.table.where_many(batch.sample_id) if batch is not None else None
        values, culprits = nonfinite.blame(loss, self.env.rank, poses)
        if self.config.train.on_nonfinite_loss != "skip":
            raise FloatingPointError(
                f"non-finite training loss ({values}) at {where} on {culprits}; lower train.lr, check the data, "
                "or set train.on_nonfinite_loss: skip"
            )
        self.nonfinite_steps += 1
        if self.env.is_main:
            log.warning("skipping the step at %s: non-finite loss (%s) on %s", where, values, culprits)
        return False

    def backward(self, loss: torch.Tensor, timer: PhaseTimer) -> None:
        """Backward, timed (see timing.timed_backward); a peer lost in the gradient all-reduce is named."""
        timed_backward(loss, timer, self.grad_clock)

    def forward_loss(self, batch) -> torch.Tensor:
        """Binary cross-entropy of the model's logits (computed in fp32 whatever the autocast)."""
        with amp_context(self.device, self.config.train.amp), guarded("broadcast", "DDP buffers"):
            logits = self.model(batch)
        pos_weight = torch.tensor(self.data.pos_weight, device=logits.device) if self.data.pos_weight != 1.0 else None
        target = self.loss.bce_target(batch)  # the labels, or mixed with data.target_column's soft targets
        bce = F.binary_cross_entropy_with_logits(logits.float(), target, pos_weight=pos_weight)
        return self.loss(bce, logits, batch)

    @torch.no_grad()
    def validation_logits(self, loader, io_counts: Optional[np.ndarray] = None) -> tuple[torch.Tensor, torch.Tensor]:
        """Logits and sample ids of this rank's share of ``loader``."""
        return score_share(
            self.scoring_model(), loader, self.device, self.config.train.amp, self.show_progress, io_counts
        )

    def scoring_model(self) -> torch.nn.Module:
        """The model evaluation runs: the plain module under DDP (no gradient sync), else the training one."""
        return self.eval_model if isinstance(self.model, torch.nn.parallel.DistributedDataParallel) else self.model

    def evaluate(self, io_counts: Optional[np.ndarray] = None) -> dict[str, float]:
        """Validation metrics over the gathered predictions of all ranks (equal to a 1-rank run)."""
        logits, ids = self.validation_logits(self.data.val_loader, io_counts)
        logits = gather_varlen(logits, self.env, what="val_logits").cpu().numpy()
        ids = gather_varlen(ids, self.env, what="val_ids").cpu().numpy()
        table = self.data.val_set.table
        return classification_report(logits, table.label[ids], table.complex_code[ids], ~table.is_crystal[ids])

    # ------------------------------------------------------------------ outputs

    def save_checkpoints(self, metrics: dict[str, float]) -> None:
        """last.pt every epoch, best.pt when the epoch is the best by train.select_on; rank 0 writes, others
        wait."""
        improved = self.selector.update(metrics)
        self.best_auc = self.selector.best.get("val_auc", -math.inf)
        if self.env.is_main:
            state = self.checkpoint_state()
            directory = self.out_dir / "checkpoints"
            state.save(directory / "last.pt")
            if improved:
                state.save(directory / "best.pt")
        barrier("checkpoint")
        self.lifecycle.checkpoint_written()

    def close(self) -> None:
        """Stop loader workers (persistent workers otherwise outlive the run), sync out_dir a last time,
        then release it (the lock is never synced)."""
        self.data.train_loader.close()
        self.data.val_loader.close()
        if self.output_sync is not None:
            self.output_sync.close()
            self.output_sync = None
        if self.lock is not None:
            self.lock.release()
            self.lock = None
        self.reporter.close()
