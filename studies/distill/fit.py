"""Fit and transfer of a student trained on a teacher's scores, per run of studies/realdock/run.py --teacher.

For each tag and fold: the training-set fit from the run's epochs.jsonl (the fit check's ``fit_*`` fields at the
epoch best.pt was written at, read from the checkpoint, and at the last epoch) and, on the held-out fold's docked
poses, how often the student's first pose is the teacher's first pose, the median per-complex Spearman with the
teacher, and the student's and Vina's top-1 against the labels. Writes one JSON per call and prints a table.

    python -m studies.distill.fit --work studies/corpus/work --peer-scores studies/peers/results/corpus_gnina.csv \
        --out studies/distill/results/fit.json TAG [TAG ...]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from pecan import report
from pecan.engine.state import CheckpointState
from pecan.scoring.scores_csv import read_scores

ROOT = Path(__file__).resolve().parents[2]


def epoch_records(run_dir: Path) -> list[dict]:
    """The run's epoch records (stop markers left out)."""
    return report.read_records(run_dir / "epochs.jsonl")


def best_record(run_dir: Path, records: list[dict]) -> dict:
    """The record of the epoch best.pt was written at (the checkpoint's own ``epoch``: whatever rule chose it)."""
    path = run_dir / "checkpoints" / "best.pt"
    epoch = CheckpointState.load(path).epoch
    chosen = [record for record in records if record.get("epoch") == epoch]
    if not chosen:
        raise SystemExit(f"error: {path} is from epoch {epoch}, which {run_dir / 'epochs.jsonl'} does not hold")
    return chosen[-1]


def first_agreement(scores: pd.DataFrame, teacher: str) -> pd.DataFrame:
    """Per held-out complex: whether the student's first pose is the teacher's, its Spearman with the teacher,
    and whether the student's, Vina's and the teacher's first poses are near-native."""
    rows = []
    for complex_id, poses in scores.groupby("complex_id"):
        if len(poses) < 2:
            continue
        student = poses.loc[poses["pecan_score"].idxmax()]
        top_teacher = poses[teacher].max()
        rows.append(
            {
                "complex_id": complex_id,
                "agrees": bool(poses.loc[student.name, teacher] == top_teacher),
                "docking_agrees": bool(poses.loc[poses["docking_score"].idxmin(), teacher] == top_teacher),
                "spearman": poses["pecan_score"].rank().corr(poses[teacher].rank()),
                "student_top1": int(student["label"]),
                "docking_top1": int(poses.loc[poses["docking_score"].idxmin(), "label"]),
                "teacher_top1": int(poses.loc[poses[teacher].idxmax(), "label"]),
                "any_native": int(poses["label"].max()),
            }
        )
    return pd.DataFrame(rows)


def scores_name(tag: str, checkpoint: str) -> str:
    """A fold's held-out scores file: run.py's (best.pt) or last_epoch.py's (last.pt)."""
    return f"{tag}_scores.csv" if checkpoint == "best" else f"{tag}_last_scores.csv"


def fold_summary(fold_dir: Path, tag: str, peers: pd.DataFrame, teacher: str, checkpoint: str = "best") -> dict:
    """One fold's fit (training complexes) and transfer (held-out complexes, scored by best.pt as run.py does, or
    by last.pt as last_epoch.py does) figures."""
    records = epoch_records(fold_dir / tag)
    fit_fields = ("fit_top1", "fit_docking_top1", "fit_teacher_top1", "fit_teacher_spearman", "fit_complexes")
    scores = read_scores(fold_dir / scores_name(tag, checkpoint))
    scores = scores.merge(peers, on=["complex_id", "pose_id"], how="inner", validate="one_to_one")
    held_out = first_agreement(scores, teacher)
    best = best_record(fold_dir / tag, records)
    return {
        "epochs": len(records),
        "fit_last": {k: records[-1].get(k) for k in fit_fields},
        "fit_best": {k: best.get(k) for k in fit_fields},
        "fit_curve": [record.get("fit_teacher_top1") for record in records],
        "epoch_wall_s": [min(r["wall_s"] for r in records), max(r["wall_s"] for r in records)],
        "fit_check_s_median": float(np.median([r["fit_check_s"] for r in records if "fit_check_s" in r] or [np.nan])),
        "held_out": {
            "complexes": len(held_out),
            "teacher_agreement": float(held_out["agrees"].mean()),
            "vina_teacher_agreement": float(held_out["docking_agrees"].mean()),
            "teacher_spearman_median": float(held_out["spearman"].median()),
            "student_top1": int(held_out["student_top1"].sum()),
            "docking_top1": int(held_out["docking_top1"].sum()),
            "teacher_top1": int(held_out["teacher_top1"].sum()),
        },
    }


def main(argv=None) -> int:
    """Every tag's folds, one JSON, one table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tags", nargs="+")
    parser.add_argument("--work", type=Path, default=ROOT / "studies" / "corpus" / "work")
    parser.add_argument("--peer-scores", type=Path, default=ROOT / "studies/peers/results/corpus_gnina.csv")
    parser.add_argument("--teacher", default="cnn_score_default", help="the teacher's column of --peer-scores")
    parser.add_argument("--out", type=Path, default=None, help="the JSON (default: print only)")
    parser.add_argument(
        "--checkpoint", choices=("best", "last"), default="best", help="held-out scores of best.pt or last.pt"
    )
    args = parser.parse_args(argv)
    peers = read_scores(args.peer_scores)[["complex_id", "pose_id", args.teacher]]
    result = {}
    for tag in args.tags:
        folds = sorted(p.parent.name for p in args.work.glob(f"folds/*/{scores_name(tag, args.checkpoint)}"))
        result[tag] = {
            fold: fold_summary(args.work / "folds" / fold, tag, peers, args.teacher, args.checkpoint) for fold in folds
        }
    print(
        "| tag | fold | epochs | fit teacher-first (best / last) | fit Spearman | fit top-1 / Vina | held-out "
        "teacher-first (Vina's) | held-out Spearman | held-out top-1 / Vina / teacher |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for tag, folds in result.items():
        for fold, s in folds.items():
            best, last, held = s["fit_best"], s["fit_last"], s["held_out"]
            print(
                f"| {tag} | {fold} | {s['epochs']} | {best['fit_teacher_top1']:.2f} / {last['fit_teacher_top1']:.2f} "
                f"| {last['fit_teacher_spearman']:.2f} | {last['fit_top1']:.2f} / {last['fit_docking_top1']:.2f} "
                f"| {held['teacher_agreement']:.2f} ({held['vina_teacher_agreement']:.2f}) "
                f"| {held['teacher_spearman_median']:.2f} "
                f"| {held['student_top1']} / {held['docking_top1']} / {held['teacher_top1']} of {held['complexes']} |"
            )
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
