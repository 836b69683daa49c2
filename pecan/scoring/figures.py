"""The figures of a scoring run: per split (train / val / test / unseen) and over all scored poses, the
model's AUC, accuracy at score 0.5, top-1 and top-3 success and the rank of the first near-native pose per
complex, beside the docking score's own AUC and top-k on the same poses. The summary leads with the held-out
splits.

Two AUCs, because PECAN's task is ranking each ligand's poses: ``auc`` pools every pose of every ligand (it
also rewards telling one ligand's poses from another's), ``ligand_auc`` is the mean of each ligand's own AUC
over the ligands with both near-native and other poses (``ligand_auc_complexes`` of them): the one that
measures the ranking. The score is not calibrated (a near-native pose may score below 0.5), so the accuracy at
0.5 says little; the ranking figures say more. A complex with one pose ranks nothing: top-k and the first
near-native rank count only complexes of two poses or more (``single_pose_complexes`` counts the others, and
a warning says so), so a folder of one-pose files never reports a top-1 of 1.000."""

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


def ligand_auc(scores: np.ndarray, labels: np.ndarray, complexes: np.ndarray) -> tuple[float, int]:
    """(the mean of each complex's own AUC, how many complexes it averages): only complexes with both a
    near-native and another pose have one; NaN and 0 when none has."""
    frame = pd.DataFrame({"score": scores, "label": labels, "complex_id": complexes})
    aucs = [
        roc_auc(part["score"].to_numpy(), part["label"].to_numpy())
        for _, part in frame.groupby("complex_id", sort=False)
        if 0 < part["label"].sum() < len(part)
    ]
    return (float(np.mean(aucs)) if aucs else math.nan), len(aucs)


def ranked(complexes: np.ndarray) -> np.ndarray:
    """Which poses belong to a complex of two poses or more (one pose is not a ranking)."""
    counts = pd.Series(complexes).map(pd.Series(complexes).value_counts()).to_numpy()
    return counts > 1


def _ranking(scores: np.ndarray, labels: np.ndarray, complexes: np.ndarray, prefix: str) -> dict[str, Any]:
    """Pooled and per-ligand AUC, top-1, top-3 and the first near-native rank of one ranking (top-k and
    ranks over complexes of two poses or more), keys starting with ``prefix``."""
    pooled = roc_auc(scores, labels)
    within, count = ligand_auc(scores, labels, complexes)
    keep = ranked(complexes)
    scores, labels, complexes = scores[keep], labels[keep], complexes[keep]
    ranks = first_native_rank(scores, labels, complexes)
    return {
        f"{prefix}auc": pooled,
        f"{prefix}ligand_auc": within,
        f"{prefix}ligand_auc_complexes": count,
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
        out["ligand_auc"], out["ligand_auc_complexes"] = ligand_auc(score, labels, complexes)
    keep = ranked(complexes)
    out["single_pose_complexes"] = int(pd.Series(complexes[~keep]).nunique())
    ranks = first_native_rank(ranking[keep], labels[keep], complexes[keep])
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
        f"model {_ranking_text(values, '')} accuracy at score 0.5 {values['accuracy']:.3f} | "
        f"docking score {_ranking_text(values, 'docking_')} "
        f"({values['docking_poses']} poses with a docking score)"
    )


def _ranking_text(values: dict[str, Any], prefix: str) -> str:
    """'AUC 0.900 (pooled), 0.850 within ligands (N) top-1 ... top-3 ...' of one ranking; 'n/a' for a figure
    no complex gives (within ligands: none has both kinds of pose; top-k: every complex has one pose)."""

    def figure(key: str) -> str:
        value = values.get(prefix + key, math.nan)
        return "n/a" if value is None or math.isnan(value) else f"{value:.3f}"

    return (
        f"AUC {figure('auc')} pooled, {figure('ligand_auc')} within ligands "
        f"({values.get(prefix + 'ligand_auc_complexes', 0)}) top-1 {figure('top1')} top-3 {figure('top3')}"
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
    single = values.get("single_pose_complexes", 0)
    if single:
        log.warning(
            "%d of the %d labelled complexes have one pose: nothing ranks them, so top-1, top-3 and the first "
            "near-native rank leave them out (n/a when every complex has one). A folder of one-pose files (DiffDock, "
            "most ML docking) is one complex per file: put each ligand's poses in one SDF to rank them",
            single,
            values["complexes"],
        )
    if values.get("clashes"):
        from pecan.scoring.clashes import CLASH_DISTANCE, METAL_CLASH_DISTANCE

        log.warning(
            "%d scored poses clash with the receptor (a ligand heavy atom within %.1f A of a receptor heavy atom, "
            "%.1f A of a metal ion): pecan_clash is 1, and each ranks after every pose of its ligand without one",
            values["clashes"],
            CLASH_DISTANCE,
            METAL_CLASH_DISTANCE,
        )
