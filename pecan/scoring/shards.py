"""Score every docked pose of the configured data with a trained checkpoint: scores.csv and metrics JSON.

``pecan predict CHECKPOINT --data-dir D`` or ``pecan predict CHECKPOINT --config CONFIG.yaml``. The
checkpoint defines the model (any registered variant, rebuilt through the config path training uses) and the
settings that shape its samples (``pecan.engine.pins``); scoring reads nothing else of the training
run. Each rank scores its share of the poses; rank 0 gathers them, labels each complex with its split and
writes the files atomically. Crystal poses are not scored: they are not candidates a chemist ranks, and they
have no docking score to compare with.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pandas as pd
import torch

from pecan.config import Config, ConfigError
from pecan.data.index import IndexBuilder
from pecan.data.loader import make_dataset, make_loader, make_sampler, prepare_job_data
from pecan.engine.distributed import DistEnv, barrier, gather_varlen
from pecan.engine.evaluate import score_share
from pecan.engine.pins import assign_splits, warn_if_synthetic
from pecan.runtime.errors import DataError
from pecan.runtime.fileio import commit_together, discard_temps, json_text, temp_beside
from pecan.runtime.progress import resolve_mode
from pecan.scoring.checkpoint import build_scoring_model, read_checkpoint, scoring_config
from pecan.scoring.consensus import COLUMN as CONSENSUS
from pecan.scoring.consensus import consensus_column
from pecan.scoring.ensemble import MeanProbability, merged_record
from pecan.scoring.figures import report_figures, split_metrics
from pecan.scoring.invocation import checkpoint_fields, checkpoint_paths
from pecan.scoring.scores_csv import SCORE_COLUMNS

log = logging.getLogger(__name__)


def _scoring_indexes(config: Config, progress: bool) -> tuple[pd.DataFrame, pd.DataFrame]:
    index = scoring_index(config, progress)
    return index, index.iloc[:0]


def scores_test_inputs(config: Config) -> bool:
    """Whether scoring reads data.test_csvs/test_fns (else the training and validation sources)."""
    return bool(config.data.test_csvs or config.data.test_fns)


def scoring_index(config: Config, progress: bool) -> pd.DataFrame:
    """Docked poses of data.test_csvs/test_fns when set, else of the training and validation sources."""
    if scores_test_inputs(config):  # crystal poses are not scored, and new poses need no label
        index = IndexBuilder.for_test(config.data, progress).index()
    else:
        index = pd.concat(IndexBuilder.from_data(config.data, progress).splits(), ignore_index=True)
    index = index[index["is_crystal"] == 0].reset_index(drop=True)
    check_unique_poses(index)
    return index


def check_unique_poses(index: pd.DataFrame) -> None:
    """A (complex, pose) pair in two inputs would get two scores under one name: DataError naming both."""
    duplicated = index[index.duplicated(["complex_id", "pose_id"], keep=False)]
    if duplicated.empty:
        return
    first = duplicated.iloc[0]
    copies = duplicated[(duplicated["complex_id"] == first["complex_id"]) & (duplicated["pose_id"] == first["pose_id"])]
    shards = [str(s) for s in copies["shard"]] if "shard" in copies else ["?", "?"]
    pairs = len(duplicated.drop_duplicates(["complex_id", "pose_id"]))
    raise DataError(
        f"complex {first['complex_id']} pose {first['pose_id']} is in more than one input: {shards[0]} and "
        f"{shards[1]} ({pairs} duplicated (complex, pose) pair(s)); score the inputs separately or "
        f"drop the copies"
    )


def scored_poses(
    dataset, poses: pd.DataFrame, logits: np.ndarray, ids: np.ndarray, docking_weight: float = 0.0
) -> pd.DataFrame:
    """scores.csv rows of the scored ``poses`` (their index): PECAN's score (the sigmoid of the logit; not calibrated)
    and rank within the complex (1 = best), the docking score, rmsd and label; the logit beside them. With
    ``docking_weight`` > 0 the rank follows the consensus with the docking score (``pecan.scoring.consensus``),
    written beside the score; a pose without a docking score is then a DataError naming it."""
    table = dataset.table
    scores = pd.DataFrame(
        {
            "complex_id": table.complex_id[ids],
            "pose_id": table.pose_id[ids],
            "pecan_score": 1.0 / (1.0 + np.exp(-logits.astype(np.float64))),
            "logit": logits,
        }
    )
    known = poses[["complex_id", "pose_id", "docking_score", "rmsd", "label"]]
    scores = scores.merge(known, on=["complex_id", "pose_id"], how="left", validate="one_to_one")
    scores["split"] = ""
    by = "pecan_score"
    if docking_weight:
        lacking = ~np.isfinite(scores["docking_score"].to_numpy(dtype=float))
        if lacking.any():
            first = scores[lacking].iloc[0]
            raise DataError(
                f"pecan predict: --docking-weight ranks by a consensus with the docking score, but "
                f"{int(lacking.sum())} pose(s) have none (first: complex {first['complex_id']} pose "
                f"{first['pose_id']}); score them with --docking-weight 0"
            )
        scores[CONSENSUS] = consensus_column(scores, docking_weight)
        by = CONSENSUS
    ranks = scores.groupby("complex_id")[by].rank(ascending=False, method="first")
    scores["pecan_rank"] = ranks.astype(int)
    scores = scores.sort_values(["complex_id", "pecan_rank"]).reset_index(drop=True)
    return scores[[*SCORE_COLUMNS, *([CONSENSUS] if docking_weight else []), "logit"]]


def metrics_path(out: Path) -> Path:
    """The JSON beside scores.csv: scores.metrics.json."""
    return out.with_name(out.stem + ".metrics.json")


def run_predict(
    config: Config,
    env: DistEnv,
    device: torch.device,
    checkpoint: str | Sequence[str],
    out: str,
    allow: tuple[str, ...] = (),
    docking_weight: float = 0.0,
) -> dict[str, Any]:
    """Score the configured poses on every rank with the checkpoint's model and sample settings (several
    checkpoints: their ensemble, ``pecan.scoring.ensemble``); rank 0 writes ``out`` and its metrics JSON. Reads
    nothing of train.out_dir, takes no lock."""
    paths = checkpoint_paths(checkpoint)
    if not paths:
        raise ConfigError("no checkpoint to score with")
    states = [read_checkpoint(path) for path in paths]
    # Each member's settings are checked against the same config: one pass over the samples feeds them all.
    members = [scoring_config(state, config, path, tuple(allow)) for state, path in zip(states, paths)]
    config = members[0]
    progress = resolve_mode(config.train.progress) if env.is_main else "off"
    models = [build_scoring_model(s, m.model, p, device) for s, m, p in zip(states, members, paths)]
    model = models[0] if len(models) == 1 else MeanProbability(models).eval()
    record = states[0].complexes if len(states) == 1 else merged_record([state.complexes for state in states])
    # The trainer's job protocol: rank 0 indexes and decides the packs, node leaders confirm and stage.
    job = prepare_job_data(
        config.data,
        rank=env.rank,
        local_rank=env.local_rank,
        progress=progress,
        build_indexes=lambda: _scoring_indexes(config, progress),
    )
    poses = job.train_index  # the job protocol's first index: here, every pose to score
    if poses.empty:
        raise ConfigError("no docked poses to score in the configured data")
    if env.is_main:
        for state, path in zip(states, paths):
            warn_if_synthetic(state, path, poses["shard"].unique())
    dataset = make_dataset(config.data, poses, job.packs, augment=False)
    sampler = make_sampler(
        dataset, config.data, train=False, rank=env.rank, world_size=env.world_size, seed=config.train.seed
    )
    workers = max(config.data.num_workers, 0)
    loader = make_loader(dataset, sampler, config.data.batch_size, workers, pin_memory=device.type == "cuda")
    try:
        logits, ids = score_share(model, loader, device, config.train.amp, progress)
    finally:
        loader.close()
    logits, ids = gather_varlen(logits, env).cpu().numpy(), gather_varlen(ids, env).cpu().numpy()
    values: dict[str, Any] = {}
    if env.is_main:
        scores = scored_poses(dataset, poses, logits, ids, docking_weight)
        from_test = set(scores["complex_id"]) if scores_test_inputs(config) else set()
        scores["split"] = assign_splits(scores["complex_id"], record, from_test)
        values = {**split_metrics(scores), **checkpoint_fields(checkpoint), "scores": str(out)}
        if docking_weight:
            values["docking_weight"] = docking_weight
        write_outputs(scores, values, Path(out), record)
    barrier()
    return values


def write_outputs(scores: pd.DataFrame, values: dict[str, Any], out: Path, record: dict | None) -> None:
    """scores.csv and its metrics JSON (renamed into place together: both or neither), the summary lines and
    the warnings on the split."""
    files: dict[Path, Path] = {}
    try:
        files.update({destination: temp_beside(destination) for destination in (out, metrics_path(out))})
        scores[[*SCORE_COLUMNS, *([CONSENSUS] if CONSENSUS in scores else [])]].to_csv(files[out], index=False)
        files[metrics_path(out)].write_text(json_text(values, indent=2, default=float))
        commit_together([(temp, destination) for destination, temp in files.items()])
    finally:
        discard_temps(list(files.values()))
    report_figures(values, record)
    print(f"wrote {out} and {metrics_path(out)}", flush=True)
