"""The training loop: data, model, AMP, compile, DDP, evaluation, checkpoints and epoch reports."""
from __future__ import annotations

import dataclasses
import logging
import math
import platform
import subprocess
import sys
import time
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any, Iterator, Optional

import numpy as np
import torch
import torch.distributed as dist
import torch.nn.functional as F
from tqdm import tqdm

from pecan import config as config_module
from pecan import report, tracing
from pecan.config import Config
from pecan.data import format as fmt
from pecan.data.h5dataset import COUNTER_FIELDS, counters_to_dict
from pecan.data.index import DataError
from pecan.data.loader import load_split_frames, make_dataset, make_loader, make_sampler, prepare_packs
from pecan.train import checkpoint as ckpt
from pecan.train.distributed import DistEnv, barrier, loader_workers_per_rank
from pecan.train.metrics import classification_report

log = logging.getLogger(__name__)


# ---------------------------------------------------------------------------- helpers applied from outside

def amp_context(device: torch.device, amp: str):
    """bf16 autocast on CPU or CUDA, or a null context; bf16 needs no GradScaler."""
    if amp == "bf16":
        return torch.autocast(device_type=device.type, dtype=torch.bfloat16)
    return nullcontext()


def apply_compile(model: torch.nn.Module, enabled: bool) -> torch.nn.Module:
    """torch.compile with dynamic shapes (graph sizes vary per batch); applied before DDP wrapping."""
    if not enabled:
        return model
    return torch.compile(model, dynamic=True)


def wrap_ddp(model: torch.nn.Module, env: DistEnv, device: torch.device) -> torch.nn.Module:
    """DistributedDataParallel when the job has more than one rank."""
    if not env.is_distributed:
        return model
    device_ids = [device.index] if device.type == "cuda" else None
    return torch.nn.parallel.DistributedDataParallel(model, device_ids=device_ids)


def seed_everything(seed: int, deterministic: bool) -> None:
    """Seed Python, NumPy and torch; optionally demand deterministic kernels."""
    import random

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    if deterministic:
        torch.use_deterministic_algorithms(True, warn_only=True)


def cosine_schedule(total_steps: int, warmup_steps: int, floor: float = 0.05):
    """Linear warm-up, then cosine decay to ``floor`` times the peak learning rate."""
    def factor(step: int) -> float:
        if warmup_steps and step < warmup_steps:
            return (step + 1) / warmup_steps
        progress = min((step - warmup_steps) / max(total_steps - warmup_steps, 1), 1.0)
        return floor + (1 - floor) * 0.5 * (1 + math.cos(math.pi * progress))
    return factor


def gather_varlen(tensor: torch.Tensor, env: DistEnv) -> torch.Tensor:
    """Concatenate a 1-D/2-D tensor of any length from every rank (rank order)."""
    if not env.is_distributed:
        return tensor
    size = torch.tensor([tensor.shape[0]], device=tensor.device)
    sizes = [torch.zeros_like(size) for _ in range(env.world_size)]
    dist.all_gather(sizes, size)
    longest = int(max(s.item() for s in sizes))
    padded = torch.zeros((longest, *tensor.shape[1:]), dtype=tensor.dtype, device=tensor.device)
    padded[:tensor.shape[0]] = tensor
    pieces = [torch.zeros_like(padded) for _ in range(env.world_size)]
    dist.all_gather(pieces, padded)
    return torch.cat([p[:int(s.item())] for p, s in zip(pieces, sizes)])


def all_reduce_sum(tensor: torch.Tensor, env: DistEnv) -> torch.Tensor:
    """Sum a tensor over ranks (in place when distributed)."""
    if env.is_distributed:
        dist.all_reduce(tensor)
    return tensor


def broadcast_object(value: Any, env: DistEnv) -> Any:
    """Rank 0's value on every rank."""
    if not env.is_distributed:
        return value
    box = [value]
    dist.broadcast_object_list(box, src=0)
    return box[0]


def resolve_pos_weight(setting, train_frame) -> float:
    """train.pos_weight as a number: 'auto' is negatives/positives among the training samples."""
    if setting != "auto":
        return float(setting)
    positives = int((train_frame["label"] > 0).sum())
    if positives == 0:
        raise config_module.ConfigError("train.pos_weight: auto needs positive training samples; there are none")
    return (len(train_frame) - positives) / positives


class PhaseTimer:
    """Seconds per phase; on CUDA, event pairs read once per epoch instead of a sync per step."""

    def __init__(self, device: torch.device) -> None:
        self.cuda = device.type == "cuda"
        self.seconds: dict[str, float] = {}
        self.events: dict[str, list] = {}

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        """Time the enclosed block under ``name``."""
        if self.cuda:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            yield
            end.record()
            self.events.setdefault(name, []).append((start, end))
        else:
            t0 = time.perf_counter()
            yield
            self.seconds[name] = self.seconds.get(name, 0.0) + time.perf_counter() - t0

    def add(self, name: str, seconds: float) -> None:
        """Add host-measured seconds."""
        self.seconds[name] = self.seconds.get(name, 0.0) + seconds

    def totals(self) -> dict[str, float]:
        """Seconds per phase (synchronises CUDA once)."""
        out = dict(self.seconds)
        if self.events:
            torch.cuda.synchronize()
            for name, pairs in self.events.items():
                out[name] = out.get(name, 0.0) + sum(s.elapsed_time(e) for s, e in pairs) / 1000.0
        return out


# ---------------------------------------------------------------------------- the trainer

class Trainer:
    """Owns one rank's share of a run: build, then ``fit``."""

    def __init__(self, config: Config, env: DistEnv, device: torch.device) -> None:
        self.config, self.env, self.device = config, env, device
        self.out_dir = Path(config.train.out_dir)
        self.show_progress = config.train.progress and env.is_main
        self.start_epoch, self.step, self.best_auc = 0, 0, -math.inf
        self.last_batch = None

    # ------------------------------------------------------------------ build

    def setup(self) -> "Trainer":
        """Build data, model and optimiser, then resume if asked."""
        seed_everything(self.config.train.seed, self.config.train.deterministic)
        if self.env.is_main:
            config_module.save(self.config, self.out_dir / "config.yaml")
        self.build_data()
        self.build_model()
        self.build_optimizer()
        self.maybe_resume()
        if self.env.is_main:
            self.record_run()
        return self

    def build_data(self) -> None:
        """Indexes on rank 0 (broadcast), packs once per job, then per-rank loaders."""
        data = self.config.data
        frames = load_split_frames(data, self.show_progress) if self.env.is_main else None
        self.train_frame, self.val_frame = broadcast_object(frames, self.env)
        if len(self.val_frame) == 0:
            raise config_module.ConfigError("the validation split is empty: set data.val_fraction > 0 or "
                                            "data.val_csvs / data.val_fns")
        workers = data.num_workers
        if workers < 0:
            workers = 0 if data.io_mode == "packed" else loader_workers_per_rank(self.env.local_world_size)
        packs = None
        if data.io_mode == "packed":
            frames = [self.train_frame, self.val_frame]
            # Rank 0 first (on shared storage the other nodes then find its packs valid), then one leader
            # per node (node-local cache directories), then the rest only locate: each shard's sampled
            # hash is read once per node, not once per rank.
            if self.env.is_main:
                packs = prepare_packs(data, frames, max(workers, 1), self.show_progress)
            barrier()
            if self.env.local_rank == 0 and not self.env.is_main:
                packs = prepare_packs(data, frames, max(workers, 1))
            barrier()
            if self.env.local_rank != 0:
                packs = prepare_packs(data, frames, validate=False)
        self.pos_weight = resolve_pos_weight(self.config.train.pos_weight, self.train_frame)
        self.train_set = make_dataset(data, self.train_frame, packs)
        self.val_set = make_dataset(data, self.val_frame, packs, augment=False)
        seed = self.config.train.seed
        self.train_sampler = make_sampler(self.train_set, data, train=True, rank=self.env.rank,
                                          world_size=self.env.world_size, seed=seed)
        val_sampler = make_sampler(self.val_set, data, train=False, rank=self.env.rank,
                                   world_size=self.env.world_size, seed=seed)
        trace_dir = config_module.trace_dir(self.config) if tracing.is_enabled() else None
        worker_init = tracing.WorkerInit(trace_dir, self.env.rank)
        pin = self.device.type == "cuda"
        self.train_loader = make_loader(self.train_set, self.train_sampler, data.batch_size, workers, worker_init, pin)
        self.val_loader = make_loader(self.val_set, val_sampler, data.batch_size, workers, worker_init, pin)
        if self.env.is_main:
            log.info("data: %d training and %d validation samples (%d / %d complexes), io_mode %s, %d workers/rank",
                     len(self.train_set), len(self.val_set), self.train_frame["pdbid"].nunique(),
                     self.val_frame["pdbid"].nunique(), data.io_mode, workers)
            log.info("loss: positive-class weight %.4g (train.pos_weight %s)", self.pos_weight,
                     self.config.train.pos_weight)

    def build_model(self) -> None:
        """Registry lookup, then compile and DDP applied from outside the model."""
        from model import build_model

        torch.manual_seed(self.config.train.seed)
        self.raw_model = build_model(self.config.model.name, self.config.model,
                                     nn_type=self.config.model.nn_type).to(self.device)
        compiled = apply_compile(self.raw_model, self.config.train.compile)
        self.model = wrap_ddp(compiled, self.env, self.device)
        if self.env.is_main:
            count = sum(p.numel() for p in self.raw_model.parameters())
            log.info("model: %s, %d parameters, amp %s, compile %s", type(self.raw_model).__name__, count,
                     self.config.train.amp, self.config.train.compile)

    def steps_per_epoch(self) -> int:
        """Optimizer steps in one epoch on every rank."""
        steps = len(self.train_loader)
        cap = self.config.train.max_steps_per_epoch
        return min(steps, cap) if cap else steps

    def build_optimizer(self) -> None:
        """AdamW with warm-up + cosine decay over the whole run."""
        train = self.config.train
        self.optimizer = torch.optim.AdamW(self.raw_model.parameters(), lr=train.lr, weight_decay=train.weight_decay)
        total = self.steps_per_epoch() * train.epochs
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(self.optimizer,
                                                           cosine_schedule(total, train.warmup_steps))

    def maybe_resume(self) -> None:
        """Continue from a checkpoint (train.resume) with model, optimiser, schedule and RNG state."""
        path = ckpt.resume_path(self.config.train.resume, self.out_dir)
        if path is None:
            return
        state = ckpt.load_checkpoint(path, map_location=self.device)
        self.raw_model.load_state_dict(ckpt.clean_state_dict(state["model"]))
        self.optimizer.load_state_dict(state["optimizer"])
        self.scheduler.load_state_dict(state["scheduler"])
        ckpt.set_rng_state(state["rng"])
        self.start_epoch, self.step = int(state["epoch"]), int(state["step"])
        self.best_auc = float(state["best_auc"])
        if state.get("config_digest") != self.config.digest() and self.env.is_main:
            log.warning("resuming from %s written under a different config (digest %s, now %s)", path,
                        state.get("config_digest"), self.config.digest())
        if self.env.is_main:
            log.info("resumed from %s after epoch %d", path, self.start_epoch)
        self.resumed_from = str(path)

    def record_run(self) -> None:
        """What this run ran: config digest, git commit, package versions, world size."""
        info = {"started": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "config_digest": self.config.digest(),
                "git": git_state(Path(__file__).resolve().parents[2]), "packages": package_versions(),
                "python": sys.version.split()[0], "host": platform.node(), "argv": sys.argv,
                "world_size": self.env.world_size, "launcher": self.env.launcher, "device": str(self.device),
                "resumed_from": getattr(self, "resumed_from", None), "start_epoch": self.start_epoch}
        report.append_record(self.out_dir / "runs.jsonl", info)

    # ------------------------------------------------------------------ loop

    def fit(self) -> list[dict[str, Any]]:
        """Train the remaining epochs; returns this call's epoch records."""
        records = []
        for epoch in range(self.start_epoch, self.config.train.epochs):
            with tracing.span("pipeline", "epoch", epoch=epoch + 1):
                records.append(self.run_epoch(epoch))
        return records

    def run_epoch(self, epoch: int) -> dict[str, Any]:
        """Train, evaluate, checkpoint and report one epoch."""
        start = time.perf_counter()
        timer = PhaseTimer(self.device)
        io_counts = np.zeros(len(COUNTER_FIELDS), dtype=np.int64)
        train = self.train_epoch(epoch, timer, io_counts)
        with timer.phase("eval_s"), tracing.span("pipeline", "evaluate", epoch=epoch + 1):
            metrics = self.evaluate(io_counts)
        with timer.phase("checkpoint_s"), tracing.span("checkpoint", "capture", epoch=epoch + 1):
            self.save_checkpoints(epoch, metrics)
        record = self.epoch_record(epoch, time.perf_counter() - start, timer.totals(), train, metrics, io_counts)
        record.update(self.weights_check())
        if self.env.is_main:
            report.append_record(self.out_dir / "epochs.jsonl", record)
            print(report.epoch_line(record), flush=True)
            print(report.wall_time_table(record), flush=True)
        return record

    def train_epoch(self, epoch: int, timer: PhaseTimer, io_counts: np.ndarray) -> dict[str, float]:
        """One pass over this rank's share of the training data."""
        self.model.train()
        self.train_sampler.set_epoch(epoch)
        loss_sum = torch.zeros((), dtype=torch.float64, device=self.device)
        samples = 0
        steps = self.steps_per_epoch()
        batches = tracing.iterate(self.train_loader, "dataloader", "fetch")
        bar = tqdm(total=steps, desc=f"epoch {epoch + 1}", unit="batch", disable=not self.show_progress, leave=False)
        wait_start = time.perf_counter()
        for step_in_epoch, batch in enumerate(batches):
            timer.add("data_wait_s", time.perf_counter() - wait_start)
            io_counts += batch.io_counts.numpy()
            del batch.io_counts
            if batch.num_graphs:
                self.last_batch = batch
                loss = self.train_step(batch, timer)
                loss_sum += loss.double() * batch.num_graphs
                samples += batch.num_graphs
            elif self.env.is_distributed:
                self.keep_in_step(timer)
            bar.update()
            if step_in_epoch + 1 >= steps:
                break
            wait_start = time.perf_counter()
        bar.close()
        totals = all_reduce_sum(torch.stack([loss_sum, torch.tensor(float(samples), dtype=torch.float64,
                                                                     device=self.device)]), self.env).tolist()
        return {"train_loss": totals[0] / max(totals[1], 1), "samples": int(totals[1])}

    def keep_in_step(self, timer: PhaseTimer) -> None:
        """Every sample of this rank's batch was skipped as bad: replay the previous batch with zero weight,
        because DDP ranks that skip a step leave the others waiting in the gradient all-reduce forever."""
        if self.last_batch is None:
            self.last_batch = self.first_good_sample()
        log.warning("rank %d: a whole batch was skipped as bad; replaying the previous batch with zero weight",
                    self.env.rank)
        self.train_step(self.last_batch, timer, weight=0.0)

    def first_good_sample(self):
        """The first readable training sample, as a one-graph batch (for a replay before any good batch)."""
        for index in range(len(self.train_set)):
            batch = self.train_set.__getitems__([index])
            del batch.io_counts
            if batch.num_graphs:
                return batch
        raise DataError("every training sample is bad; nothing to train on")

    def train_step(self, batch, timer: PhaseTimer, weight: float = 1.0) -> torch.Tensor:
        """Forward, backward and optimiser step on one batch; returns the detached loss."""
        batch = batch.to(self.device, non_blocking=True)
        with timer.phase("forward_s"), tracing.span("compute", "forward"):
            loss = self.forward_loss(batch)
        with timer.phase("backward_s"), tracing.span("compute", "backward"):
            (loss * weight).backward()
        with timer.phase("optimizer_s"), tracing.span("compute", "step"):
            if self.config.train.grad_clip > 0:
                torch.nn.utils.clip_grad_norm_(self.raw_model.parameters(), self.config.train.grad_clip)
            self.optimizer.step()
            self.scheduler.step()
            self.optimizer.zero_grad(set_to_none=True)
        self.step += 1
        return loss.detach()

    def forward_loss(self, batch) -> torch.Tensor:
        """Binary cross-entropy of the model's logits (computed in fp32 whatever the autocast)."""
        with amp_context(self.device, self.config.train.amp):
            logits = self.model(batch)
        pos_weight = torch.tensor(self.pos_weight, device=logits.device) if self.pos_weight != 1.0 else None
        return F.binary_cross_entropy_with_logits(logits.float(), batch.y.float(), pos_weight=pos_weight)

    @torch.no_grad()
    def predict(self, loader, io_counts: Optional[np.ndarray] = None) -> tuple[torch.Tensor, torch.Tensor]:
        """Logits and sample ids of this rank's share of ``loader``."""
        self.model.eval()
        logits, ids = [], []
        for batch in tqdm(loader, desc="evaluate", unit="batch", disable=not self.show_progress, leave=False):
            if io_counts is not None:
                io_counts += batch.io_counts.numpy()
            del batch.io_counts
            if not batch.num_graphs:
                continue
            batch = batch.to(self.device, non_blocking=True)
            with amp_context(self.device, self.config.train.amp):
                logits.append(self.model(batch).float())
            ids.append(batch.sample_id)
        empty = torch.zeros(0, device=self.device)
        return (torch.cat(logits) if logits else empty,
                torch.cat(ids) if ids else empty.long())

    def evaluate(self, io_counts: Optional[np.ndarray] = None) -> dict[str, float]:
        """Validation metrics over the gathered predictions of all ranks (equal to a 1-rank run)."""
        logits, ids = self.predict(self.val_loader, io_counts)
        logits, ids = gather_varlen(logits, self.env).cpu().numpy(), gather_varlen(ids, self.env).cpu().numpy()
        table = self.val_set.table
        return classification_report(logits, table.label[ids], table.complex_id[ids], ~table.is_crystal[ids])

    # ------------------------------------------------------------------ outputs

    def save_checkpoints(self, epoch: int, metrics: dict[str, float]) -> None:
        """last.pt every epoch, best.pt when validation AUC improves; rank 0 writes, others wait."""
        auc = metrics["val_auc"]
        improved = not math.isnan(auc) and auc > self.best_auc
        if improved:
            self.best_auc = auc
        if self.env.is_main:
            payload = {"model": ckpt.clean_state_dict(self.raw_model.state_dict()),
                       "optimizer": self.optimizer.state_dict(), "scheduler": self.scheduler.state_dict(),
                       "epoch": epoch + 1, "step": self.step, "best_auc": self.best_auc, "rng": ckpt.rng_state(),
                       "config_digest": self.config.digest(), "world_size": self.env.world_size,
                       "model_config": dataclasses.asdict(self.config.model), "feature_layout": fmt.feature_layout(),
                       "metrics": {k: float(v) for k, v in metrics.items()}}
            directory = self.out_dir / "checkpoints"
            ckpt.save_checkpoint(directory / "last.pt", payload)
            if improved:
                ckpt.save_checkpoint(directory / "best.pt", payload)
        barrier()

    def epoch_record(self, epoch: int, wall: float, phases: dict[str, float], train: dict[str, float],
                     metrics: dict[str, float], io_counts: np.ndarray) -> dict[str, Any]:
        """The epochs.jsonl record (fields in report.REQUIRED_FIELDS and more)."""
        counts_tensor = all_reduce_sum(torch.from_numpy(io_counts.copy()), self.env)
        counts = counters_to_dict(counts_tensor)
        phase_values = {p: phases.get(p, 0.0) for p in report.PHASES}
        record = {"epoch": epoch + 1, "wall_s": wall, "samples": train["samples"],
                  "samples_per_s": train["samples"] / max(wall, 1e-9), "train_loss": train["train_loss"],
                  **metrics, "lr": self.scheduler.get_last_lr()[0], "world_size": self.env.world_size,
                  "io_mode": self.config.data.io_mode, **report.io_ratios(counts), **phase_values,
                  "data_wait_share": phase_values["data_wait_s"] / max(wall, 1e-9), "io_counts": counts,
                  "amp": self.config.train.amp, "compile": self.config.train.compile, "pos_weight": self.pos_weight}
        return record

    @torch.no_grad()
    def weights_check(self) -> dict[str, Any]:
        """A checksum of the weights on every rank; ranks that disagree ran different code or lost sync."""
        checksum = torch.zeros(1, dtype=torch.float64, device=self.device)
        for index, parameter in enumerate(self.raw_model.parameters()):
            checksum += (parameter.double() * (1.0 + 1e-3 * index)).sum()
        sums = gather_varlen(checksum, self.env).cpu().tolist()
        in_sync = all(value == sums[0] for value in sums)
        if not in_sync and self.env.is_main:
            log.error("model weights differ between ranks: %s", sums)
        return {"weights_checksum": sums[0], "ranks_in_sync": in_sync}

    def close(self) -> None:
        """Stop loader workers (persistent workers otherwise outlive the run)."""
        for loader in (getattr(self, "train_loader", None), getattr(self, "val_loader", None)):
            if loader is not None:
                loader.close()


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
