"""Per-complex ranking figures of a rescoring benchmark: top-k success of a score, the ceiling, AUC, and
bootstrap confidence intervals over complexes.

Top-k success here counts over *all* complexes (a complex with no near-native pose is a failure for every
ranker), so model, docking score and ceiling share one denominator; the ceiling is the share of complexes
with any near-native pose.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from pecan.train.metrics import roc_auc


def top_k_hits(frame: pd.DataFrame, score: str, k: int, higher_is_better: bool = True) -> pd.Series:
    """Per complex: 1 when any of its ``k`` best-ranked poses by ``score`` is near-native (ties: file order)."""
    ordered = frame.sort_values(score, ascending=not higher_is_better, kind="stable")
    return ordered.groupby("complex", sort=True)["label"].apply(lambda labels: int(labels.iloc[:k].max()))


def ceiling_hits(frame: pd.DataFrame) -> pd.Series:
    """Per complex: 1 when any docked pose is near-native."""
    return frame.groupby("complex", sort=True)["label"].max().astype(int)


def bootstrap_interval(values: np.ndarray, draws: np.ndarray, level: float = 0.95) -> list[float]:
    """Percentile interval of the mean of ``values`` over bootstrap resamples ``draws`` ([n_boot, n] indexes)."""
    if len(values) == 0:
        return [float("nan"), float("nan")]
    means = np.asarray(values, dtype=float)[draws].mean(1)
    tail = (1 - level) / 2
    return [float(np.quantile(means, tail)), float(np.quantile(means, 1 - tail))]


def complex_table(scores: pd.DataFrame) -> pd.DataFrame:
    """One row per complex: model and docking-score top-1/top-3 hits and the ceiling. ``scores`` has columns
    complex, score (higher = more likely near-native), docking_score (lower = better), label."""
    table = pd.DataFrame(
        {
            "model_top1": top_k_hits(scores, "score", 1),
            "model_top3": top_k_hits(scores, "score", 3),
            "docking_top1": top_k_hits(scores, "docking_score", 1, higher_is_better=False),
            "docking_top3": top_k_hits(scores, "docking_score", 3, higher_is_better=False),
            "ceiling": ceiling_hits(scores),
        }
    )
    table.index.name = "complex"
    return table


def summarize(scores: pd.DataFrame, n_boot: int = 2000, seed: int = 0) -> dict:
    """Success rates with 95% bootstrap intervals over complexes (paired: the same resample for every
    column, so the model-minus-docking difference has its own interval), pose-level AUCs, counts."""
    table = complex_table(scores)
    n = len(table)
    draws = np.random.default_rng(seed).integers(0, n, size=(n_boot, n)) if n else np.zeros((0, 0), int)
    out: dict = {"complexes": n, "poses": len(scores), "near_native_poses": int(scores["label"].sum())}
    for column in table.columns:
        values = table[column].to_numpy()
        out[column] = {
            "hits": int(values.sum()),
            "rate": float(values.mean()) if n else float("nan"),
            "ci95": bootstrap_interval(values, draws),
        }
    difference = (table["model_top1"] - table["docking_top1"]).to_numpy()
    out["top1_difference"] = {
        "mean": float(difference.mean()) if n else float("nan"),
        "ci95": bootstrap_interval(difference, draws),
    }
    labels = scores["label"].to_numpy().astype(int)
    out["model_auc"] = roc_auc(scores["score"].to_numpy(), labels)
    out["docking_auc"] = roc_auc(-scores["docking_score"].to_numpy(dtype=float), labels)
    return out
