"""Building one rank's share of a run for the trainer: the data (indexes, packs and staging through the
loader's job protocol, datasets, samplers, loaders) and the model (registry lookup, then compile and DDP
applied from outside the model)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import torch

import model as registry
from pecan import config as config_module
from pecan.data.loader import make_dataset, make_loader, make_sampler, prepare_job_data
from pecan.data.sample import COUNTER_FIELDS
from pecan.runtime import tracing
from pecan.runtime.errors import ConfigError
from pecan.train import checkpoint as ckpt
from pecan.train.components import apply_compile, wrap_ddp
from pecan.train.distributed import GradCommClock
from pecan.train.metrics import resolve_pos_weight

if TYPE_CHECKING:
    from pecan.train.trainer import Trainer

log = logging.getLogger(__name__)


def build_data(trainer: Trainer) -> None:
    """Indexes, packs and staging through the loader's job protocol, then per-rank loaders."""
    data = trainer.config.data
    workers = trainer.threads.num_workers
    with tracing.span("pecan.setup", "index"):
        job = prepare_job_data(
            data,
            rank=trainer.env.rank,
            local_rank=trainer.env.local_rank,
            processes=max(workers, 1),
            progress=trainer.show_progress,
        )
    trainer.train_index, trainer.val_index, trainer.staging = job.train_index, job.val_index, job.staging
    packs = job.packs
    if len(trainer.val_index) == 0:
        raise config_module.ConfigError(
            "the validation split is empty: set data.val_fraction > 0 or data.val_csvs / data.val_fns"
        )
    try:
        trainer.pos_weight = resolve_pos_weight(
            trainer.config.train.pos_weight, trainer.train_index["label"].to_numpy()
        )
    except ValueError as err:
        raise config_module.ConfigError(str(err)) from err
    trainer.train_set = make_dataset(data, trainer.train_index, packs)
    if registry.augments_inputs(trainer.config.model) and getattr(trainer.train_set, "use_decode_cache", False):
        # The model transforms its inputs randomly in training: decoded samples must not be reused.
        trainer.train_set.use_decode_cache = False
        log.info("decode cache off: model %s augments its inputs", trainer.config.model.name)
    trainer.val_set = make_dataset(data, trainer.val_index, packs, augment=False)
    build_loaders(trainer)
    frames, datasets = (trainer.train_index, trainer.val_index), (trainer.train_set, trainer.val_set)
    trainer.skipped_at_start = sum(int(frame.attrs.get("skipped", 0)) for frame in frames)
    trainer.skipped_at_start += sum(getattr(d, "skipped_at_build", 0) for d in datasets)
    if trainer.env.is_main:
        log_data(trainer)


def build_loaders(trainer: Trainer) -> None:
    """The per-rank samplers and loaders of the two splits (workers traced and timed)."""
    data, workers, seed = trainer.config.data, trainer.threads.num_workers, trainer.config.train.seed
    trainer.train_sampler = make_sampler(
        trainer.train_set, data, train=True, rank=trainer.env.rank, world_size=trainer.env.world_size, seed=seed
    )
    val_sampler = make_sampler(
        trainer.val_set, data, train=False, rank=trainer.env.rank, world_size=trainer.env.world_size, seed=seed
    )
    trace_dir = config_module.trace_dir(trainer.config) if tracing.is_enabled() else None
    worker_init = tracing.WorkerInit(trace_dir, trainer.env.rank, data.data_dir if trainer.config.trace.posix else None)
    pin = trainer.device.type == "cuda"
    busy = COUNTER_FIELDS.index("worker_busy_ns")
    trainer.train_loader = make_loader(
        tracing.BusyDataset(trainer.train_set, busy),
        trainer.train_sampler,
        data.batch_size,
        workers,
        worker_init,
        pin,
        seed=seed,
    )
    trainer.val_loader = make_loader(
        tracing.BusyDataset(trainer.val_set, busy), val_sampler, data.batch_size, workers, worker_init, pin
    )


def log_data(trainer: Trainer) -> None:
    """Rank 0's lines about the data: sizes, io_mode, workers, samples skipped, the loss weight."""
    data, workers = trainer.config.data, trainer.threads.num_workers
    log.info(
        "data: %d training and %d validation samples (%d / %d complexes), io_mode %s, %d workers/rank",
        len(trainer.train_set),
        len(trainer.val_set),
        trainer.train_index["complex_id"].nunique(),
        trainer.val_index["complex_id"].nunique(),
        data.io_mode,
        workers,
    )
    if trainer.skipped_at_start:
        log.warning("%d bad sample(s) skipped before training (on_bad_sample: skip)", trainer.skipped_at_start)
    log.info(
        "loss: positive-class weight %.4g (train.pos_weight %s)",
        trainer.pos_weight,
        trainer.config.train.pos_weight,
    )


def build_model(trainer: Trainer) -> None:
    """Registry lookup, then compile and DDP applied from outside the model."""
    torch.manual_seed(trainer.config.train.seed)
    trainer.raw_model = registry.build_model(
        trainer.config.model.name, trainer.config.model, nn_type=trainer.config.model.nn_type
    ).to(trainer.device)
    if trainer.config.train.init_from:
        load_initial_weights(trainer.raw_model, trainer.config.train.init_from, trainer.config)
    compiled = apply_compile(trainer.raw_model, trainer.config.train.compile)
    trainer.model = wrap_ddp(compiled, trainer.env, trainer.device)
    # Evaluation runs the module DDP wraps, not DDP: DDP's forward syncs buffers, a collective that a rank
    # with no validation batch never joins (a hang until the collective timeout).
    trainer.eval_model = compiled
    trainer.grad_clock = None
    if trainer.env.is_distributed and trainer.device.type == "cpu":
        trainer.grad_clock = GradCommClock()
        trainer.model.register_comm_hook(None, trainer.grad_clock.hook)
    if trainer.env.is_main:
        count = sum(p.numel() for p in trainer.raw_model.parameters())
        log.info(
            "model: %s, %d parameters, amp %s, compile %s",
            type(trainer.raw_model).__name__,
            count,
            trainer.config.train.amp,
            trainer.config.train.compile,
        )


def load_initial_weights(model: torch.nn.Module, path: str, config) -> None:
    """Copy a checkpoint's model weights into ``model`` (train.init_from); a missing, damaged or mismatched
    checkpoint is a ConfigError naming the key, the file and the model settings that differ."""
    try:
        state = ckpt.load_checkpoint(path)
    except (FileNotFoundError, ValueError) as err:
        raise ConfigError(f"train.init_from: {err}") from None
    if "model" not in state:
        raise ConfigError(f"train.init_from: {path} holds no model weights (not a PECAN checkpoint)")
    try:
        model.load_state_dict(ckpt.clean_state_dict(state["model"]))
    except RuntimeError as err:
        saved = state.get("config")
        differences = ckpt.config_differences(saved, config.to_dict(), "model") if isinstance(saved, dict) else []
        # Without a stored config, the first of torch's mismatch lines names a tensor and both shapes.
        detail = "; ".join(differences) or next(iter(str(err).splitlines()[1:]), str(err)).strip()
        raise ConfigError(f"train.init_from: {path} was trained with other model settings ({detail})") from None
    log.info("model weights initialised from %s (train.init_from)", path)
