#!/usr/bin/env python
"""Pose-ranking figures of peer scores (e.g. GNINA's, from gnina_score.py) on a ``pecan redock`` manifest.

Run with the main project environment (RDKit, pandas, numpy)::

    .venv/bin/python -m studies.peers.evaluate \
        --manifest studies/realdock/docked/manifest.csv --scores studies/peers/results/realdock_gnina.csv

Labels: every pose record of the manifest's ``poses`` SDF gets its symmetry-aware heavy-atom RMSD to the
``crystal_ligand`` (RDKit ``rdMolAlign.CalcRMS``, no alignment, on heavy-atom graphs with every bond single
and no charges: the converter's own ``pecan.convert.chemistry.symmetric_rmsd``); near-native means RMSD < 2 A.

Figures per scorer, with the conventions of ``pecan.redock.ranking``: top-k is the number of complexes
with a near-native pose among the k best-ranked poses (ties in file order), counted over all complexes
(one with no near-native pose is a failure for every scorer); AUC is the pose-level ROC AUC over all
poses pooled. CNN scores and affinities rank higher-is-better, the docking score lower-is-better.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from pecan.convert.chemistry import ConversionError, symmetric_rmsd  # the converter's own labels
from pecan.train.metrics import roc_auc  # noqa: F401 - the project's AUC (also evaluate.roc_auc for tests)

NEAR_NATIVE = 2.0
# (column, higher is better); columns absent from the table are skipped.
SCORERS = (
    ("cnn_score_default", True),
    ("cnn_affinity_default", True),
    ("cnn_score_default2018", True),
    ("cnn_affinity_default2018", True),
    ("docking_score", False),
)


# ---------------------------------------------------------------------------- ranking figures


def top_k_hits(frame: pd.DataFrame, score: str, k: int, higher_is_better: bool = True) -> pd.Series:
    """Per complex: 1 when any of its ``k`` best-ranked poses by ``score`` is near-native (ties: file order).
    ``frame`` must be in file order (complex_id, record); a missing score ranks last."""
    ordered = frame.sort_values(score, ascending=not higher_is_better, kind="stable", na_position="last")
    return ordered.groupby("complex_id", sort=True)["label"].apply(lambda labels: int(labels.iloc[:k].max()))


def summarize(frame: pd.DataFrame, scorers=SCORERS) -> dict:
    """``frame``: one row per pose with complex_id, record, label (0/1) and the scorer columns.
    Returns counts, the ceiling and, per scorer present, top1/top3 hits and the pose AUC."""
    frame = frame.sort_values(["complex_id", "record"], kind="stable").reset_index(drop=True)
    labels = frame["label"].to_numpy().astype(int)
    out: dict = {
        "complexes": int(frame["complex_id"].nunique()),
        "poses": int(len(frame)),
        "near_native_poses": int(labels.sum()),
        "ceiling": int(frame.groupby("complex_id")["label"].max().sum()),
        "scorers": {},
    }
    for column, higher in scorers:
        if column not in frame.columns:
            continue
        values = frame[column].to_numpy(dtype=float)
        known = ~np.isnan(values)
        out["scorers"][column] = {
            "higher_is_better": higher,
            "top1": int(top_k_hits(frame, column, 1, higher).sum()),
            "top3": int(top_k_hits(frame, column, 3, higher).sum()),
            "auc": roc_auc(values[known] if higher else -values[known], labels[known]),
            "scored_poses": int(known.sum()),
        }
    return out


def format_summary(summary: dict) -> str:
    n = summary["complexes"]
    lines = [
        f"{n} complexes, {summary['poses']} poses, {summary['near_native_poses']} near-native "
        f"(RMSD < {NEAR_NATIVE:g} A); ceiling {summary['ceiling']}/{n}",
        f"{'scorer':<26} {'top-1':>7} {'top-3':>7} {'AUC':>6}",
    ]
    for column, values in summary["scorers"].items():
        lines.append(f"{column:<26} {values['top1']:>3}/{n:<3} {values['top3']:>3}/{n:<3} {values['auc']:>6.3f}")
    return "\n".join(lines)


# ---------------------------------------------------------------------------- labels from RDKit


def read_sdf(path: Path) -> list:
    """Every record of an SDF in file order, None where RDKit cannot read one (read unsanitized)."""
    from rdkit import Chem, RDLogger

    RDLogger.DisableLog("rdApp.warning")  # e.g. "tagged as 2D" on crystal files written by a model server

    return list(Chem.SDMolSupplier(str(path), sanitize=False, removeHs=False))


def pose_labels(manifest: Path, threshold: float = NEAR_NATIVE) -> pd.DataFrame:
    """One row per pose record: complex_id, record, pose_id, rmsd, label and the manifest's score_property
    (as docking_score)."""
    base = manifest.resolve().parent
    rows = []
    with open(manifest, newline="") as handle:
        for entry in csv.DictReader(handle):
            crystal = read_sdf(base / entry["crystal_ligand"])[0]
            prop = entry.get("score_property") or "docking_score"
            for index, pose in enumerate(read_sdf(base / entry["poses"])):
                rmsd, docking = float("nan"), float("nan")
                if pose is not None:
                    try:
                        rmsd = symmetric_rmsd(pose, crystal)
                    except ConversionError as error:
                        print(f"{entry['complex_id']} record {index}: no RMSD ({error})", file=sys.stderr)
                    if pose.HasProp(prop):
                        docking = float(pose.GetProp(prop))
                rows.append(
                    {
                        "complex_id": entry["complex_id"],
                        "record": index,
                        "pose_id": pose.GetProp("_Name") if pose is not None else "",
                        "rmsd": rmsd,
                        "label": int(rmsd < threshold),
                        "docking_score": docking,
                    }
                )
    return pd.DataFrame(rows)


def merge(labels: pd.DataFrame, scores: pd.DataFrame) -> pd.DataFrame:
    """Labels joined with the scores on (complex_id, record), restricted to the complexes scored."""
    # the scores' own pose titles (pose_id; pose in files written before the rename) repeat the labels'
    scores = scores.drop(columns=[c for c in ("pose_id", "pose", "docking_score") if c in scores.columns])
    scored = set(scores["complex_id"].astype(str))
    labels = labels[labels["complex_id"].isin(scored)]
    frame = labels.merge(scores, on=["complex_id", "record"], how="left", validate="one_to_one")
    return frame


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--manifest", required=True, type=Path)
    parser.add_argument("--scores", required=True, type=Path, help="gnina_score.py's CSV")
    parser.add_argument("--threshold", type=float, default=NEAR_NATIVE, help="near-native RMSD (A)")
    parser.add_argument("--json", type=Path, default=None, help="also write the figures here")
    parser.add_argument("--poses-out", type=Path, default=None, help="also write the per-pose table here")
    args = parser.parse_args(argv)

    labels = pose_labels(args.manifest, args.threshold)
    scores = pd.read_csv(args.scores, dtype={"complex_id": str})
    frame = merge(labels, scores)
    missing = sorted(set(labels["complex_id"]) - set(frame["complex_id"]))
    if missing:
        print(f"not scored, left out: {', '.join(missing)}", file=sys.stderr)
    summary = summarize(frame)
    summary["threshold"] = args.threshold
    print(format_summary(summary))
    if args.json:
        args.json.write_text(json.dumps(summary, indent=1) + "\n")
    if args.poses_out:
        frame.to_csv(args.poses_out, index=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
