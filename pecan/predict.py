"""Score every docked pose of the configured data with a trained checkpoint: scores.csv and metrics JSON.

``python main_app.py CONFIG.yaml --predict CHECKPOINT --out scores.csv``. Each rank scores its share of
the poses; rank 0 gathers them and writes the files atomically. Crystal poses are not scored: they are
not candidates a chemist ranks, and they have no docking score to compare with.
"""
from __future__ import annotations

import dataclasses
import json
import logging
import math
from pathlib import Path
from typing import Any, Optional

import numpy as np
import pandas as pd
import torch
from tqdm import tqdm

from pecan import tracing
from pecan.config import Config, ConfigError, ModelConfig
from pecan.data import format as fmt
from pecan.data.index import build_index
from pecan.data.loader import load_split_frames, make_dataset, make_loader, make_sampler, prepare_job_data
from pecan.fileio import write_csv, write_text
from pecan.train import checkpoint as ckpt
from pecan.train.components import amp_context
from pecan.train.distributed import DistEnv, barrier, gather_varlen
from pecan.train.metrics import accuracy, roc_auc, top1_success

log = logging.getLogger(__name__)

SCORE_COLUMNS = ("complex", "pose", "score", "rank", "docking_score", "rmsd", "label")


def checkpoint_model_config(state: dict, config: Config, path: Path) -> ModelConfig:
    """The checkpoint's own model config (the YAML's for checkpoints that did not record one)."""
    layout = state.get("feature_layout")
    if layout is not None and layout != fmt.feature_layout():
        raise ConfigError(f"checkpoint {path} was trained on feature layout {layout}, but these shards have "
                          f"{fmt.feature_layout()}: it cannot score them")
    stored = state.get("model_config")
    if stored is None:
        return config.model
    names = {f.name for f in dataclasses.fields(ModelConfig)}
    unknown = sorted(set(stored) - names)
    if unknown:
        raise ConfigError(f"checkpoint {path}: model config has keys this code does not know: {', '.join(unknown)}")
    model_config = ModelConfig(**stored)
    if model_config != config.model:
        log.warning("using the model config stored in %s; it differs from the YAML's model section", path)
    return model_config


def load_model(path: Path, config: Config, device: torch.device) -> torch.nn.Module:
    """Build the checkpoint's model and load its weights; a mismatch is a ConfigError naming both sides."""
    from model import build_model

    try:
        state = ckpt.load_checkpoint(path, map_location="cpu")
    except ValueError as err:
        raise ConfigError(f"--predict: {err}") from err
    if "model" not in state:
        raise ConfigError(f"{path} is not a PECAN checkpoint (no 'model' entry)")
    model_config = checkpoint_model_config(state, config, path)
    model = build_model(model_config.name, model_config, nn_type=model_config.nn_type)
    try:
        model.load_state_dict(ckpt.clean_state_dict(state["model"]))
    except RuntimeError as err:
        first = str(err).splitlines()[0:3]
        raise ConfigError(f"checkpoint {path} does not fit model config {dataclasses.asdict(model_config)}: it was "
                          f"trained with a different model config or feature layout ({' '.join(first)})") from err
    return model.to(device).eval()


def _scoring_frames(config: Config, progress: bool) -> tuple[pd.DataFrame, pd.DataFrame]:
    frame = scoring_frame(config, progress)
    return frame, frame.iloc[:0]


def scoring_frame(config: Config, progress: bool) -> pd.DataFrame:
    """Docked poses of data.test_csvs/test_fns when set, else of the training and validation sources."""
    data = config.data
    if data.test_csvs or data.test_fns:
        frame = build_index(data.test_csvs, data.test_fns, data.data_dir, pose_group=data.pose_group,
                            crystal_group=data.crystal_group, use_crystal=False, rmsd_threshold=data.rmsd_threshold,
                            index_prefix=f"{data.index_prefix}_test", on_bad_sample=data.on_bad_sample,
                            progress=progress, index_dir=data.index_dir, labels_optional=True,
                            label_source=data.label_source, label_conflict=data.label_conflict)
    else:
        frame = pd.concat(load_split_frames(data, progress), ignore_index=True)
    return frame[frame["is_crystal"] == 0].reset_index(drop=True)


@torch.no_grad()
def score_share(model, loader, device: torch.device, amp: str, progress: bool,
                io_counts: Optional[np.ndarray] = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Logits and sample ids of this rank's share of ``loader`` (training's evaluation uses it too); the
    batches' I/O counters are added to ``io_counts`` when given."""
    model.eval()
    logits, ids = [], []
    for batch, counts in tqdm(loader, desc="scoring", unit="batch", disable=not progress, leave=False):
        if io_counts is not None:
            io_counts += counts
        if not batch.num_graphs:
            continue
        with tracing.span("device", "transfer", size=batch.num_graphs, phase="eval"):
            batch = batch.to(device, non_blocking=True)
        with tracing.span("pecan.eval", "forward", size=batch.num_graphs), amp_context(device, amp):
            logits.append(model(batch).float())
        ids.append(batch.sample_id)
    empty = torch.zeros(0, device=device)
    return torch.cat(logits) if logits else empty, torch.cat(ids) if ids else empty.long()


def score_table(dataset, frame: pd.DataFrame, logits: np.ndarray, ids: np.ndarray) -> pd.DataFrame:
    """scores.csv rows: probability, rank within complex (1 = best), docking score, rmsd and label."""
    table = dataset.table
    scores = pd.DataFrame({"complex": table.pdbid[ids], "pose": table.poseid[ids],
                           "score": 1.0 / (1.0 + np.exp(-logits.astype(np.float64))), "logit": logits})
    known = frame[["pdbid", "poseid", "score", "rmsd", "label"]].rename(
        columns={"pdbid": "complex", "poseid": "pose", "score": "docking_score"})
    scores = scores.merge(known, on=["complex", "pose"], how="left", validate="one_to_one")
    scores["rank"] = scores.groupby("complex")["score"].rank(ascending=False, method="first").astype(int)
    scores = scores.sort_values(["complex", "rank"]).reset_index(drop=True)
    return scores[[*SCORE_COLUMNS, "logit"]]


def metrics(scores: pd.DataFrame) -> dict[str, Any]:
    """ROC AUC, accuracy and top-1 of the model, and the docking score's AUC and top-1 on the same poses."""
    out: dict[str, Any] = {"poses": len(scores), "complexes": int(scores["complex"].nunique())}
    labeled = scores[scores["label"].notna()]
    if len(labeled) < len(scores) or labeled.empty:
        out["labeled"] = False
        return out
    labels = labeled["label"].to_numpy().astype(int)
    complexes = labeled["complex"].to_numpy()
    out.update({"labeled": True, "positives": int(labels.sum()), "auc": roc_auc(labeled["score"].to_numpy(), labels),
                "accuracy": accuracy(labeled["logit"].to_numpy(), labels),
                "top1": top1_success(labeled["score"].to_numpy(), labels, complexes)})
    docked = labeled[np.isfinite(labeled["docking_score"].to_numpy(dtype=float))]
    if len(docked):
        # Docking scores are energies: lower is better, so the baseline ranks by the negated score.
        baseline = -docked["docking_score"].to_numpy(dtype=float)
        out["docking_auc"] = roc_auc(baseline, docked["label"].to_numpy().astype(int))
        out["docking_top1"] = top1_success(baseline, docked["label"].to_numpy().astype(int),
                                           docked["complex"].to_numpy())
        out["docking_poses"] = len(docked)
    else:
        out.update({"docking_auc": math.nan, "docking_top1": math.nan, "docking_poses": 0})
    return out


def metrics_line(values: dict[str, Any]) -> str:
    """One printed line: the model's figures beside the docking score's."""
    if not values.get("labeled"):
        return f"scored {values['poses']} poses of {values['complexes']} complexes (no labels: no metrics)"
    return (f"scored {values['poses']} poses of {values['complexes']} complexes ({values['positives']} near-native) | "
            f"model AUC {values['auc']:.3f} top-1 {values['top1']:.3f} accuracy {values['accuracy']:.3f} | "
            f"docking score AUC {values['docking_auc']:.3f} top-1 {values['docking_top1']:.3f} "
            f"({values['docking_poses']} poses with a docking score)")


def metrics_path(out: Path) -> Path:
    """The JSON beside scores.csv: scores.metrics.json."""
    return out.with_name(out.stem + ".metrics.json")


def run_predict(config: Config, env: DistEnv, device: torch.device, checkpoint: str, out: str) -> dict[str, Any]:
    """Score the configured poses on every rank; rank 0 writes ``out`` and its metrics JSON."""
    progress = config.train.progress and env.is_main
    model = load_model(Path(checkpoint), config, device)
    # The trainer's job protocol: rank 0 indexes and decides the packs, node leaders confirm and stage.
    job = prepare_job_data(config.data, rank=env.rank, local_rank=env.local_rank, progress=progress,
                           build_frames=lambda: _scoring_frames(config, progress))
    frame = job.train_frame
    if frame.empty:
        raise ConfigError("no docked poses to score in the configured data")
    dataset = make_dataset(config.data, frame, job.packs, augment=False)
    sampler = make_sampler(dataset, config.data, train=False, rank=env.rank, world_size=env.world_size,
                           seed=config.train.seed)
    workers = max(config.data.num_workers, 0)
    loader = make_loader(dataset, sampler, config.data.batch_size, workers, pin_memory=device.type == "cuda")
    try:
        logits, ids = score_share(model, loader, device, config.train.amp, progress)
    finally:
        loader.close()
    logits, ids = gather_varlen(logits, env).cpu().numpy(), gather_varlen(ids, env).cpu().numpy()
    values: dict[str, Any] = {}
    if env.is_main:
        scores = score_table(dataset, frame, logits, ids)
        values = {**metrics(scores), "checkpoint": str(checkpoint), "scores": str(out)}
        out_path = Path(out)
        write_csv(scores[list(SCORE_COLUMNS)], out_path)
        write_text(metrics_path(out_path), json.dumps(values, indent=2, default=float))
        print(metrics_line(values), flush=True)
        print(f"wrote {out_path} and {metrics_path(out_path)}", flush=True)
    barrier()
    return values
