"""The figures of a scoring run: per split (train / val / test / unseen) and over all scored poses, the
model's AUC, accuracy, top-1 and top-3 success and the rank of the first near-native pose per complex, beside
the docking score's own AUC and top-k on the same poses. The summary leads with the held-out splits."""

from __future__ import annotations

import logging
import math
from typing import Any

import numpy as np
import pandas as pd

from pecan.engine.metrics import accuracy, first_native_rank, roc_auc, topk_success
from pecan.scoring.consensus import COLUMN as CONSENSUS

log = logging.getLogger(__name__)

HELD_OUT_FIRST = ("val", "test", "unseen", "unknown", "train")
"""Order of the summary lines: figures on complexes the model never trained on come first."""


def _ranking(scores: np.ndarray, labels: np.ndarray, complexes: np.ndarray, prefix: str) -> dict[str, Any]:
    """AUC, top-1, top-3 and the first near-native rank of one ranking, keys starting with ``prefix``."""
    ranks = first_native_rank(scores, labels, complexes)
    return {
        f"{prefix}auc": roc_auc(scores, labels),
        f"{prefix}top1": topk_success(scores, labels, complexes, 1),
        f"{prefix}top3": topk_success(scores, labels, complexes, 3),
        f"{prefix}mean_first_native_rank": float(ranks.mean()) if len(ranks) else math.nan,
    }


def metrics(scores: pd.DataFrame) -> dict[str, Any]:
    """The model's figures on ``scores`` (scores.csv rows), and the docking score's on the same poses. Poses
    flagged ``pecan_clash`` (`pecan score`) are counted and ranked last, as in ``pecan_rank``: below every
    pose without a clash, and never predicted near-native."""
    out: dict[str, Any] = {"poses": len(scores), "complexes": int(scores["complex_id"].nunique())}
    if "pecan_clash" in scores:
        out["clashes"] = int(scores["pecan_clash"].sum())
        clash = scores["pecan_clash"].to_numpy(dtype=bool)
        scores = scores.assign(
            pecan_score=np.where(clash, scores["pecan_score"] - 2.0, scores["pecan_score"]),
            logit=np.where(clash, -np.inf, scores["logit"]),
        )
    labeled = scores[scores["label"].notna()]
    if len(labeled) < len(scores) or labeled.empty:
        out["labeled"] = False
        return out
    labels = labeled["label"].to_numpy().astype(int)
    complexes = labeled["complex_id"].to_numpy()
    score = labeled["pecan_score"].to_numpy()
    # Ranked by the consensus (--docking-weight), the ranking figures follow pecan_rank; the AUC stays the score's.
    by_rank = CONSENSUS in labeled
    ranking = -labeled["pecan_rank"].to_numpy(dtype=float) if by_rank else score
    out.update(
        {
            "labeled": True,
            "positives": int(labels.sum()),
            "accuracy": accuracy(labeled["logit"].to_numpy(), labels),
            **_ranking(ranking, labels, complexes, ""),
        }
    )
    if by_rank:
        out["auc"] = roc_auc(score, labels)
    ranks = first_native_rank(ranking, labels, complexes)
    out["first_native_rank"] = {str(k): int(v) for k, v in ranks.items()}
    docked = labeled[np.isfinite(labeled["docking_score"].to_numpy(dtype=float))]
    # Docking scores are energies: lower is better, so the baseline ranks by the negated score.
    out.update(
        _ranking(
            -docked["docking_score"].to_numpy(dtype=float),
            docked["label"].to_numpy().astype(int),
            docked["complex_id"].to_numpy(),
            "docking_",
        )
    )
    out["docking_poses"] = len(docked)
    return out


def split_metrics(scores: pd.DataFrame) -> dict[str, Any]:
    """Figures over all scored poses (top level) and per split (``splits``)."""
    values = metrics(scores)
    values["splits"] = {
        split: metrics(scores[scores["split"] == split]) for split in HELD_OUT_FIRST if (scores["split"] == split).any()
    }
    return values


def metrics_line(values: dict[str, Any]) -> str:
    """One printed line: the model's figures beside the docking score's (and the clashes, when counted)."""
    clashes = f" | {values['clashes']} with a clash (ranked last)" if "clashes" in values else ""
    return _figures_line(values) + clashes


def _figures_line(values: dict[str, Any]) -> str:
    if not values.get("labeled"):
        return f"scored {values['poses']} poses of {values['complexes']} complexes (no labels: no metrics)"
    return (
        f"scored {values['poses']} poses of {values['complexes']} complexes ({values['positives']} near-native) | "
        f"model AUC {values['auc']:.3f} top-1 {values['top1']:.3f} top-3 {values['top3']:.3f} "
        f"accuracy {values['accuracy']:.3f} | docking score AUC {values['docking_auc']:.3f} "
        f"top-1 {values['docking_top1']:.3f} top-3 {values['docking_top3']:.3f} "
        f"({values['docking_poses']} poses with a docking score)"
    )


def summary_lines(values: dict[str, Any]) -> list[str]:
    """The printed summary: one line per split, held-out splits first, then the line over all poses."""
    lines = [f"{split:>7}: {metrics_line(part)}" for split, part in values.get("splits", {}).items()]
    return [*lines, f"{'all':>7}: {metrics_line(values)}"]


def report_figures(values: dict[str, Any], record: dict | None) -> None:
    """The warnings on the split (no record of the training complexes: the checkpoint's ``complexes``;
    complexes it trained on) and the summary lines of a scoring run (`pecan predict` and `pecan score`)."""
    if record is None:
        log.warning(
            "the checkpoint does not record its training complexes (written before that was stored): "
            "the split column is 'unknown' and the figures may include complexes it trained on"
        )
    trained_on = values["splits"].get("train")
    if trained_on:
        log.warning(
            "%d of the %d scored complexes were used to train this checkpoint (split 'train'): their "
            "figures are not held-out performance",
            trained_on["complexes"],
            values["complexes"],
        )
    for line in summary_lines(values):
        print(line, flush=True)
    if values.get("clashes"):
        from pecan.scoring.clashes import CLASH_DISTANCE, METAL_CLASH_DISTANCE

        log.warning(
            "%d scored poses clash with the receptor (a ligand heavy atom within %.1f A of a receptor heavy atom, "
            "%.1f A of a metal ion): pecan_clash is 1, and each ranks after every pose of its ligand without one",
            values["clashes"],
            CLASH_DISTANCE,
            METAL_CLASH_DISTANCE,
        )
