"""Per-complex ranking figures of a rescoring benchmark: top-k success of a score, the ceiling, AUC, and
bootstrap confidence intervals over complexes.

Top-k success here counts over *all* complexes (a complex with no near-native pose is a failure for every
ranker), so model, docking score and ceiling share one denominator; the ceiling is the share of complexes
with any near-native pose.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from pecan.engine.metrics import roc_auc


def top_k_hits(frame: pd.DataFrame, score: str, k: int, higher_is_better: bool = True) -> pd.Series:
    """Per complex: 1 when any of its ``k`` best-ranked poses by ``score`` is near-native (ties: file order)."""
    ordered = frame.sort_values(score, ascending=not higher_is_better, kind="stable")
    return ordered.groupby("complex_id", sort=True)["label"].apply(lambda labels: int(labels.iloc[:k].max()))


def ceiling_hits(frame: pd.DataFrame) -> pd.Series:
    """Per complex: 1 when any docked pose is near-native."""
    return frame.groupby("complex_id", sort=True)["label"].max().astype(int)


def bootstrap_interval(values: np.ndarray, draws: np.ndarray, level: float = 0.95) -> list[float]:
    """Percentile interval of the mean of ``values`` over bootstrap resamples ``draws`` ([n_boot, n] indexes)."""
    if len(values) == 0:
        return [float("nan"), float("nan")]
    means = np.asarray(values, dtype=float)[draws].mean(1)
    tail = (1 - level) / 2
    return [float(np.quantile(means, tail)), float(np.quantile(means, 1 - tail))]


def complex_table(scores: pd.DataFrame, peers: tuple[str, ...] = ()) -> pd.DataFrame:
    """One row per complex: model and docking-score top-1/top-3 hits and the ceiling. ``scores`` has columns
    complex_id, pecan_score (higher = more likely near-native), docking_score (lower = better), label, and one column
    per name in ``peers``: another ranker's score of the same poses (higher = better), e.g. GNINA's CNN."""
    columns = {
        "model_top1": top_k_hits(scores, "pecan_score", 1),
        "model_top3": top_k_hits(scores, "pecan_score", 3),
        "docking_top1": top_k_hits(scores, "docking_score", 1, higher_is_better=False),
        "docking_top3": top_k_hits(scores, "docking_score", 3, higher_is_better=False),
    }
    for peer in peers:
        columns[f"{peer}_top1"] = top_k_hits(scores, peer, 1)
        columns[f"{peer}_top3"] = top_k_hits(scores, peer, 3)
    table = pd.DataFrame({**columns, "ceiling": ceiling_hits(scores)})
    table.index.name = "complex_id"
    return table


def _difference(table: pd.DataFrame, a: str, b: str, draws: np.ndarray) -> dict:
    difference = (table[a] - table[b]).to_numpy()
    return {
        "mean": float(difference.mean()) if len(difference) else float("nan"),
        "ci95": bootstrap_interval(difference, draws),
    }


def summarize(scores: pd.DataFrame, n_boot: int = 2000, seed: int = 0, peers: tuple[str, ...] = ()) -> dict:
    """Success rates with 95% bootstrap intervals over complexes (paired: the same resample for every
    column, so the model-minus-docking difference has its own interval), pose-level AUCs, counts; for each
    peer column its rates, AUC and the paired model-minus-peer and peer-minus-docking top-1 differences."""
    table = complex_table(scores, peers)
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
    out["top1_difference"] = _difference(table, "model_top1", "docking_top1", draws)
    out["top3_difference"] = _difference(table, "model_top3", "docking_top3", draws)
    labels = scores["label"].to_numpy().astype(int)
    out["model_auc"] = roc_auc(scores["pecan_score"].to_numpy(), labels)
    out["docking_auc"] = roc_auc(-scores["docking_score"].to_numpy(dtype=float), labels)
    for peer in peers:
        out[f"{peer}_auc"] = roc_auc(scores[peer].to_numpy(dtype=float), labels)
        out[f"top1_difference_vs_{peer}"] = _difference(table, "model_top1", f"{peer}_top1", draws)
        out[f"top3_difference_vs_{peer}"] = _difference(table, "model_top3", f"{peer}_top3", draws)
        out[f"{peer}_top1_difference_vs_docking"] = _difference(table, f"{peer}_top1", "docking_top1", draws)
    return out
