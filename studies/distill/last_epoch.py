"""Score each held-out fold of a finished run.py run with the last epoch's checkpoint instead of best.pt.

run.py scores with best.pt, the epoch of the best validation AUC, which for a student trained long to fit its
teacher is an early epoch that fits less. This scores the same held-out poses with last.pt (the fitted model),
from each fold run's own resolved config, and writes a results JSON in run.py's format (``<tag>_last.json``),
which transfer.py and studies/corpus/table.py read.

    python -m studies.distill.last_epoch d_klnp40
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import pandas as pd

from pecan.redock.ranking import complex_table, summarize
from pecan.scoring.scores_csv import read_scores
from studies.realdock.peers import DEFAULT_PEER_COLUMNS, peer_columns, with_peers

ROOT = Path(__file__).resolve().parents[2]

PEERS = peer_columns(DEFAULT_PEER_COLUMNS)  # the peers run.py compares by default


def predict_last(fold_dir: Path, tag: str) -> Path:
    """The fold's held-out poses scored by its run's last.pt (once: an existing scores file is reused)."""
    out = fold_dir / f"{tag}_last_scores.csv"
    if not out.exists():
        run_dir = fold_dir / tag
        command = [sys.executable, "-m", "pecan", "predict", str(run_dir / "checkpoints" / "last.pt")]
        command += [
            "--config",
            str(run_dir / "config.yaml"),
            "--set",
            f"data.test_csvs=[{fold_dir / f'{tag}_test.csv'}]",
        ]
        with open(fold_dir / f"{tag}_last.log", "w") as log:
            subprocess.run([*command, "--out", str(out)], check=True, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT)
    return out


def main(argv=None) -> int:
    """Every finished fold, the pooled figures, one JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tag")
    parser.add_argument("--work", type=Path, default=ROOT / "studies" / "corpus" / "work")
    parser.add_argument("--peer-scores", type=Path, default=ROOT / "studies/peers/results/corpus_gnina.csv")
    parser.add_argument("--results", type=Path, default=ROOT / "studies" / "distill" / "results")
    parser.add_argument("--n-boot", type=int, default=2000)
    args = parser.parse_args(argv)
    peers = read_scores(args.peer_scores)[["complex_id", "pose_id", *PEERS]].rename(columns=PEERS)
    folds, pooled = {}, []
    # A fold counts once run.py has finished it (its scores stamp): a run still training has a last.pt too.
    for fold_dir in sorted(p.parent for p in args.work.glob(f"folds/*/{args.tag}_scores.json")):
        scores = with_peers(read_scores(predict_last(fold_dir, args.tag)), peers)
        pooled.append(scores)
        folds[fold_dir.name] = summarize(scores, args.n_boot, peers=tuple(PEERS.values()))
        folds[fold_dir.name]["per_complex"] = complex_table(scores, tuple(PEERS.values())).to_dict("index")
    if not folds:
        raise SystemExit(
            f"error: no fold of {args.tag} under {args.work / 'folds'} has finished (no {args.tag}_scores.json)"
        )
    result = {
        "tag": f"{args.tag}_last",
        "checkpoint": "last.pt",
        "folds": folds,
        "pooled": summarize(pd.concat(pooled, ignore_index=True), args.n_boot, peers=tuple(PEERS.values())),
        "peers": list(PEERS.values()),
    }
    out = args.results / f"{args.tag}_last.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1, default=lambda value: value.item()))
    top1 = result["pooled"]["model_top1"]
    print(f"{args.tag} last.pt: top-1 {top1['hits']}/{result['pooled']['complexes']}; wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
