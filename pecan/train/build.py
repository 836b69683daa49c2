"""Building one rank's share of a run for the trainer, as values: the data (``TrainData``: indexes, packs
and staging through the loader's job protocol, datasets, samplers, loaders), the model (``ModelParts``:
registry lookup, then compile and DDP applied from outside the model) and the optimiser with its schedule.
``Trainer.from_config`` calls them in order and hands the values to ``Trainer``."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Optional

import pandas as pd
import torch

import model as registry
from pecan import config as config_module
from pecan.data.loader import BatchLoader, make_dataset, make_loader, make_sampler, prepare_job_data
from pecan.data.sample import COUNTER_FIELDS, PoseDataset
from pecan.data.sampler import ShardAwareSampler
from pecan.data.staging import StageReport
from pecan.engine.distributed import DistEnv, GradCommClock
from pecan.engine.state import CheckpointState
from pecan.runtime import tracing
from pecan.runtime.errors import ConfigError
from pecan.train import checkpoint as ckpt
from pecan.train.components import apply_compile, cosine_schedule, wrap_ddp
from pecan.train.metrics import resolve_pos_weight

log = logging.getLogger(__name__)


@dataclass
class TrainData:
    """One rank's data: the two split indexes, their datasets, samplers and loaders, what staging did, the
    loss's positive-class weight and the bad samples dropped before training (indexes and datasets)."""

    train_index: pd.DataFrame
    val_index: pd.DataFrame
    train_set: PoseDataset
    val_set: PoseDataset
    train_sampler: ShardAwareSampler
    val_sampler: ShardAwareSampler
    train_loader: BatchLoader
    val_loader: BatchLoader
    staging: Optional[StageReport]
    pos_weight: float
    skipped_at_start: int

    def close(self) -> None:
        """Stop the loaders' persistent workers."""
        self.train_loader.close()
        self.val_loader.close()


@dataclass
class ModelParts:
    """The model as training uses it: the bare module (weights, checkpoints), the module trained (compiled
    and DDP-wrapped as configured), the module evaluated (compiled, never DDP) and the gradient-wait clock
    (DDP on CPU only)."""

    raw_model: torch.nn.Module
    model: torch.nn.Module
    eval_model: torch.nn.Module
    grad_clock: Optional[GradCommClock]


def build_data(config, env: DistEnv, workers: int, device: torch.device, progress: str) -> TrainData:
    """Indexes, packs and staging through the loader's job protocol, then per-rank loaders; ``progress``: the
    progress display of index and pack building."""
    data = config.data
    with tracing.span("pecan.setup", "index"):
        job = prepare_job_data(
            data, rank=env.rank, local_rank=env.local_rank, processes=max(workers, 1), progress=progress
        )
    if len(job.val_index) == 0:
        raise config_module.ConfigError(
            "the validation split is empty: set data.val_fraction > 0 or data.val_csvs / data.val_fns"
        )
    try:
        pos_weight = resolve_pos_weight(config.train.pos_weight, job.train_index["label"].to_numpy())
    except ValueError as err:
        raise config_module.ConfigError(str(err)) from err
    train_set = make_dataset(data, job.train_index, job.packs)
    if registry.augments_inputs(config.model) and train_set.use_decode_cache:
        # The model transforms its inputs randomly in training: decoded samples must not be reused.
        train_set.use_decode_cache = False
        log.info("decode cache off: model %s augments its inputs", config.model.name)
    val_set = make_dataset(data, job.val_index, job.packs, augment=False)
    train_sampler, val_sampler, train_loader, val_loader = build_loaders(
        config, env, train_set, val_set, workers, device
    )
    skipped = sum(int(index.attrs.get("skipped", 0)) for index in (job.train_index, job.val_index))
    built = TrainData(
        train_index=job.train_index,
        val_index=job.val_index,
        train_set=train_set,
        val_set=val_set,
        train_sampler=train_sampler,
        val_sampler=val_sampler,
        train_loader=train_loader,
        val_loader=val_loader,
        staging=job.staging,
        pos_weight=pos_weight,
        skipped_at_start=skipped + train_set.skipped_at_build + val_set.skipped_at_build,
    )
    if env.is_main:
        log_data(config, built, workers)
    return built


def build_loaders(config, env: DistEnv, train_set, val_set, workers: int, device: torch.device) -> tuple:
    """The per-rank samplers and loaders of the two splits (workers traced and timed): (train sampler, val
    sampler, train loader, val loader)."""
    data, seed = config.data, config.train.seed
    train_sampler = make_sampler(train_set, data, train=True, rank=env.rank, world_size=env.world_size, seed=seed)
    val_sampler = make_sampler(val_set, data, train=False, rank=env.rank, world_size=env.world_size, seed=seed)
    trace_dir = config_module.trace_dir(config) if tracing.is_enabled() else None
    worker_init = tracing.WorkerInit(trace_dir, env.rank, data.data_dir if config.trace.posix else None)
    pin = device.type == "cuda"
    busy = COUNTER_FIELDS.index("worker_busy_ns")
    train_loader = make_loader(
        tracing.BusyDataset(train_set, busy), train_sampler, data.batch_size, workers, worker_init, pin, seed=seed
    )
    val_loader = make_loader(
        tracing.BusyDataset(val_set, busy), val_sampler, data.batch_size, workers, worker_init, pin
    )
    return train_sampler, val_sampler, train_loader, val_loader


def log_data(config, data: TrainData, workers: int) -> None:
    """Rank 0's lines about the data: sizes, io_mode, workers, samples skipped, the loss weight."""
    log.info(
        "data: %d training and %d validation samples (%d / %d complexes), io_mode %s, %d workers/rank",
        len(data.train_set),
        len(data.val_set),
        data.train_index["complex_id"].nunique(),
        data.val_index["complex_id"].nunique(),
        config.data.io_mode,
        workers,
    )
    if data.skipped_at_start:
        log.warning("%d bad sample(s) skipped before training (on_bad_sample: skip)", data.skipped_at_start)
    warn_small_validation(config, data.val_index)
    log.info("loss: positive-class weight %.4g (train.pos_weight %s)", data.pos_weight, config.train.pos_weight)


def warn_small_validation(config, val_index) -> None:
    """One warning when the validation set cannot tell epochs apart: a single complex has one top-1 (0 or 1)
    and its AUC ranks the poses of one pocket only, so train.select_on picks best.pt on noise."""
    complexes = val_index["complex_id"].nunique() if len(val_index) else 0
    if complexes == 0 or complexes >= 2:
        return
    log.warning(
        "the validation set holds 1 complex (%d samples): its top-1 is 0 or 1 and its AUC ranks one pocket's poses, "
        "so train.select_on (%s) chooses best.pt on noise; raise data.val_fraction or list more complexes in "
        "data.val_csvs",
        len(val_index),
        config.train.select_on,
    )


def build_model(config, env: DistEnv, device: torch.device) -> ModelParts:
    """Registry lookup, then compile and DDP applied from outside the model."""
    torch.manual_seed(config.train.seed)
    raw_model = registry.build_model(config.model.name, config.model, nn_type=config.model.nn_type).to(device)
    if config.train.init_from:
        load_initial_weights(raw_model, config.train.init_from, config)
    compiled = apply_compile(raw_model, config.train.compile, config.train.compile_backend)
    wrapped = wrap_ddp(compiled, env, device)
    grad_clock = None
    if env.is_distributed and device.type == "cpu":
        grad_clock = GradCommClock()
        wrapped.register_comm_hook(None, grad_clock.hook)
    if env.is_main:
        count = sum(p.numel() for p in raw_model.parameters())
        log.info(
            "model: %s, %d parameters, amp %s, compile %s",
            type(raw_model).__name__,
            count,
            config.train.amp,
            config.train.compile_backend if config.train.compile else "off",
        )
    # Evaluation runs the module DDP wraps, not DDP: DDP's forward syncs buffers, a collective that a rank
    # with no validation batch never joins (a hang until the collective timeout).
    return ModelParts(raw_model=raw_model, model=wrapped, eval_model=compiled, grad_clock=grad_clock)


def steps_per_epoch(train_loader, train_config) -> int:
    """Optimizer steps in one epoch on every rank (the loader's batches, capped by train.max_steps_per_epoch)."""
    steps = len(train_loader)
    cap = train_config.max_steps_per_epoch
    return min(steps, cap) if cap else steps


def build_optimizer(raw_model: torch.nn.Module, train_config, steps: int):
    """AdamW with warm-up + cosine decay over the whole run (``steps`` per epoch): (optimizer, scheduler)."""
    optimizer = torch.optim.AdamW(raw_model.parameters(), lr=train_config.lr, weight_decay=train_config.weight_decay)
    schedule = cosine_schedule(steps * train_config.epochs, train_config.warmup_steps)
    return optimizer, torch.optim.lr_scheduler.LambdaLR(optimizer, schedule)


def load_initial_weights(model: torch.nn.Module, path: str, config) -> None:
    """Copy a checkpoint's model weights into ``model`` (train.init_from); a missing, damaged or mismatched
    checkpoint is a ConfigError naming the key, the file and the model settings that differ."""
    try:
        state = CheckpointState.load(path)
    except (FileNotFoundError, ValueError) as err:
        raise ConfigError(f"train.init_from: {err}") from None
    try:
        model.load_state_dict(ckpt.clean_state_dict(state.model))
    except RuntimeError as err:
        saved = state.config
        differences = ckpt.config_differences(saved, config.to_dict(), "model") if isinstance(saved, dict) else []
        # Without a stored config, the first of torch's mismatch lines names a tensor and both shapes.
        detail = "; ".join(differences) or next(iter(str(err).splitlines()[1:]), str(err)).strip()
        raise ConfigError(f"train.init_from: {path} was trained with other model settings ({detail})") from None
    log.info("model weights initialised from %s (train.init_from)", path)
