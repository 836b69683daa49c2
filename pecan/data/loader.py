"""From the data config to DataLoaders: split indexes, packs, datasets, samplers, loaders.

Nothing here knows about DDP; the trainer decides which rank builds indexes and packs and passes
rank/world size to the samplers.
"""
from __future__ import annotations

import logging
from pathlib import Path
from typing import Callable, Optional

import pandas as pd
import torch

from pecan.config import DataConfig
from pecan.data.h5dataset import H5_LEVELS, Dataset_PDB, passthrough_collate
from pecan.data.index import build_index, split_by_complex
from pecan.data.packed import PackedDataset, PackParams, ensure_packed
from pecan.data.sampler import ShardAwareSampler

log = logging.getLogger(__name__)


def load_split_frames(cfg: DataConfig, progress: bool = False) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Train and validation indexes: separate CSVs/shard lists, or a seeded complex-level split."""
    common = dict(pose_group=cfg.pose_group, crystal_group=cfg.crystal_group, use_crystal=cfg.use_crystal,
                  rmsd_threshold=cfg.rmsd_threshold, on_bad_sample=cfg.on_bad_sample, progress=progress)
    train = build_index(cfg.train_csvs, cfg.train_fns, cfg.data_dir, index_prefix=cfg.index_prefix, **common)
    if cfg.val_csvs or cfg.val_fns:
        val = build_index(cfg.val_csvs, cfg.val_fns, cfg.data_dir, index_prefix=f"{cfg.index_prefix}_val", **common)
        shared = set(train["pdbid"]) & set(val["pdbid"])
        if shared:
            log.warning("%d complex(es) appear in both training and validation data (e.g. %s): "
                        "validation figures will be optimistic", len(shared), sorted(shared)[0])
        return train, val
    return split_by_complex(train, cfg.val_fraction, cfg.split_seed)


def pack_params(cfg: DataConfig) -> PackParams:
    """The graph parameters a pack depends on."""
    return PackParams(pose_group=cfg.pose_group, crystal_group=cfg.crystal_group, pocket_radius=cfg.pocket_radius,
                      edge_cutoff=cfg.edge_cutoff, rmsd_threshold=cfg.rmsd_threshold)


def prepare_packs(cfg: DataConfig, frames: list[pd.DataFrame], processes: int = 1,
                  progress: bool = False) -> dict[str, Path]:
    """Build (once) the packs of every shard the frames use; shard path -> pack path."""
    shards = sorted({s for frame in frames for s in frame["shard"]})
    paths = ensure_packed([Path(s) for s in shards], pack_params(cfg), cfg.cache_dir, processes, progress)
    return dict(zip(shards, paths))


def make_dataset(cfg: DataConfig, frame: pd.DataFrame, packs: Optional[dict[str, Path]] = None,
                 augment: Optional[bool] = None, io_mode: Optional[str] = None):
    """The dataset for one split at the configured I/O level."""
    mode = io_mode or cfg.io_mode
    augment = cfg.augment if augment is None else augment
    if mode == "packed":
        if packs is None:
            packs = prepare_packs(cfg, [frame])
        return PackedDataset(frame, packs, on_bad_sample=cfg.on_bad_sample, augment=augment)
    if mode not in H5_LEVELS:
        raise ValueError(f"data.io_mode {mode!r} is not one of {', '.join((*H5_LEVELS, 'packed'))}")
    return Dataset_PDB(frame, pose_group=cfg.pose_group, crystal_group=cfg.crystal_group,
                       pocket_radius=cfg.pocket_radius, edge_cutoff=cfg.edge_cutoff,
                       rmsd_threshold=cfg.rmsd_threshold, io_mode=mode, on_bad_sample=cfg.on_bad_sample,
                       augment=augment)


def make_sampler(dataset, cfg: DataConfig, *, train: bool, rank: int, world_size: int,
                 seed: int) -> ShardAwareSampler:
    """Training: shuffled and padded; evaluation: in order, every sample exactly once."""
    return ShardAwareSampler(len(dataset), shard_ids=dataset.table.shard_id, rank=rank, world_size=world_size,
                             shuffle=train, mode=cfg.shuffle, seed=seed, pad=train)


def make_loader(dataset, sampler, batch_size: int, num_workers: int,
                worker_init: Optional[Callable[[int], None]] = None,
                pin_memory: bool = False) -> torch.utils.data.DataLoader:
    """A DataLoader whose workers persist across epochs (their handles and caches survive)."""
    return torch.utils.data.DataLoader(dataset, batch_size=batch_size, sampler=sampler, num_workers=num_workers,
                                       collate_fn=passthrough_collate, persistent_workers=num_workers > 0,
                                       worker_init_fn=worker_init if num_workers > 0 else None,
                                       pin_memory=pin_memory)
