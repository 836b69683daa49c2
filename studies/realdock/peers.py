"""Peer scores beside the benchmark's (studies/realdock/run.py --peer-scores): read, joined to each fold's poses,
checked against the poses files they scored, and tabled."""

from __future__ import annotations

import argparse
import hashlib
from pathlib import Path

import pandas as pd

from pecan.scoring.scores_csv import read_scores

DEFAULT_PEER_COLUMNS = "cnn_score_default=gnina,cnn_score_default2018=gnina2018"
"""The GNINA 1.0 ensemble's and default2018's pose scores of studies/peers/gnina_score.py, as COLUMN=NAME pairs."""


def peer_columns(pairs: str) -> dict[str, str]:
    """``COLUMN=NAME,...`` as {column: name}."""
    return dict(item.split("=", 1) for item in pairs.split(",") if item)


def peer_table(args: argparse.Namespace) -> tuple[pd.DataFrame | None, tuple[str, ...]]:
    """The peers' scores keyed by (complex, pose) and their names, or (None, ()) without --peer-scores."""
    if args.peer_scores is None:
        return None, ()
    pairs = peer_columns(args.peer_columns)
    table = read_scores(args.peer_scores)  # ids as text; an older file's pose column read as pose_id
    missing = [c for c in ("complex_id", "pose_id", *pairs) if c not in table.columns]
    if missing:
        raise SystemExit(f"error: {args.peer_scores} has no column(s) {', '.join(missing)}")
    table = table.rename(columns=pairs)[["complex_id", "pose_id", *pairs.values()]]
    return table, tuple(pairs.values())


def with_peers(scores: pd.DataFrame, peers: pd.DataFrame | None) -> pd.DataFrame:
    """The fold's scores with every peer's score of the same pose; a pose without one is an error."""
    if peers is None:
        return scores
    keyed = scores.astype({"complex_id": str, "pose_id": str})
    merged = keyed.merge(peers, on=["complex_id", "pose_id"], how="left", validate="one_to_one")
    lacking = merged[peers.columns[2:]].isna().any(axis=1)
    if lacking.any():
        first = merged[lacking].iloc[0]
        raise SystemExit(
            f"error: {int(lacking.sum())} pose(s) have no peer score, e.g. {first['complex_id']}/{first['pose_id']}"
        )
    return merged


def poses_digest(path: Path) -> str:
    """The first 16 hex digits of a poses file's SHA-256 (as studies/peers/gnina_score.py records it)."""
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()[:16]


def check_peer_poses(args: argparse.Namespace, scored: set[str]) -> None:
    """``check_scored_poses`` of --peer-scores against the poses it is compared on (--test-docked, else --docked)."""
    source = args.test_docked if args.test_docked is not None else args.docked
    check_scored_poses(args.peer_scores, source, scored)


def check_scored_poses(scores: Path, source: Path, scored: set[str]) -> None:
    """Exit with an error when ``scores`` scored another version of a poses file of ``source`` (a pecan redock
    output folder) for a complex in ``scored`` (its poses_sha256 differs from the file's now); a scores file
    without that column is used with a warning."""
    table = pd.read_csv(scores, dtype=str, keep_default_na=False)  # a digest of digits is not a number
    if "poses_sha256" not in table.columns:
        print(
            f"warning: {scores} has no poses_sha256 column: cannot check that its scores are of the "
            "current poses (studies/peers/gnina_score.py writes it)",
            flush=True,
        )
        return
    recorded = table.groupby("complex_id")["poses_sha256"].agg(set).to_dict()
    manifest = pd.read_csv(source / "manifest.csv", dtype=str, keep_default_na=False)
    stale = [
        complex_id
        for complex_id, poses in zip(manifest["complex_id"], manifest["poses"])
        if complex_id in scored and complex_id in recorded and recorded[complex_id] != {poses_digest(source / poses)}
    ]
    if stale:
        raise SystemExit(
            f"error: {scores} scored other versions of {len(stale)} poses file(s) of {source} "
            f"(e.g. {', '.join(stale[:5])}): score them again"
        )


def peer_row(name: str, result: dict, peer: str) -> str:
    """One Markdown row of a peer ranker against the model on the same poses."""
    item, top3 = result[f"{peer}_top1"], result[f"{peer}_top3"]
    diff, against_docking = result[f"top1_difference_vs_{peer}"], result[f"{peer}_top1_difference_vs_docking"]
    return (
        f"| {name} | {peer} | {item['hits']}/{result['complexes']} ({100 * item['rate']:.0f}%) "
        f"| {top3['hits']}/{result['complexes']} | {result[f'{peer}_auc']:.2f} "
        f"| {100 * diff['mean']:+.0f} [{100 * diff['ci95'][0]:+.0f}, {100 * diff['ci95'][1]:+.0f}] "
        f"| {100 * against_docking['mean']:+.0f} [{100 * against_docking['ci95'][0]:+.0f}, "
        f"{100 * against_docking['ci95'][1]:+.0f}] |"
    )


PEER_HEADER = (
    "| fold | peer | peer top-1 | peer top-3 | peer AUC | model - peer top-1 (pp) | peer - docking top-1 (pp) |"
    "\n|---|---|---|---|---|---|---|"
)
