"""Consensus of a student ensemble and the docking score: each held-out pose ranked by the sum of two within-ligand
z-scores, the ensemble's logit and the negated docking score (weighted), the weight chosen for each held-out fold on
the other folds' held-out poses.

A structure-only student never reads the docking score, so what it knows and what Vina's score knows may differ;
the classic way to use both is a consensus of the two rankings. Within each complex, the members' mean probability
(ensemble.py's) is taken to its logit and z-scored over the complex's poses, the docking score likewise (negated:
lower is better), and a pose's consensus is ``z_model + w * z_docking``. The weight ``w`` of a fold is the value of
``--weights`` that ranks most complexes first on the other folds' held-out poses (ties: the smaller weight), so no
fold's own labels choose its weight; ``--weight W`` fixes it instead. The results JSON has run.py's format;
its ``model_auc`` is the ensemble's probability's (the consensus is a within-ligand ranking, not a probability).

    python -m studies.distill.consensus d_klns20_x5v d_klns20 d_klns20_s1 d_klns20_s2 d_klns20_s3 d_klns20_s4
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from pecan.redock.ranking import complex_table, roc_auc, summarize
from pecan.scoring.consensus import consensus_column
from studies.distill.ensemble import member_scores, teacher_agreement
from studies.distill.fit import first_agreement
from studies.realdock.peers import DEFAULT_PEER_COLUMNS, peer_table, with_peers
from studies.realdock.run import ensemble as mean_of

ROOT = Path(__file__).resolve().parents[2]

DEFAULT_WEIGHTS = "0,0.25,0.5,1,2"


def consensus(scores: pd.DataFrame, weight: float) -> pd.DataFrame:
    """``scores`` (an ensemble's table: pecan_score a probability, docking_score lower = better) with
    ``pecan_score`` replaced by the product's consensus (``pecan.scoring.consensus``, as `pecan predict
    --docking-weight` ranks): ``z(logit) + weight * z(-docking_score)`` within each complex."""
    probability = scores["pecan_score"].to_numpy(dtype=float).clip(1e-12, 1 - 1e-12)
    logits = scores.assign(logit=np.log(probability) - np.log1p(-probability))
    return scores.assign(pecan_score=consensus_column(logits, weight))


def top1_hits(scores: pd.DataFrame) -> int:
    """Complexes (two or more poses) whose first pose by pecan_score is near-native."""
    table = complex_table(scores)
    return int(table["model_top1"].sum())


def choose_weights(folds: dict[str, pd.DataFrame], weights: list[float]) -> dict[str, float]:
    """fold -> the weight with most top-1 hits over the other folds' poses (ties: the smaller weight)."""
    chosen = {}
    for fold in folds:
        others = pd.concat([frame for name, frame in folds.items() if name != fold], ignore_index=True)
        hits = {w: top1_hits(consensus(others, w)) for w in sorted(weights)}
        chosen[fold] = max(hits, key=lambda w: (hits[w], -w))
    return chosen


def main(argv=None) -> int:
    """Every fold's consensus with its chosen weight, pooled figures and the weights, one JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tag", help="the consensus's name: <results>/<tag>.json")
    parser.add_argument("members", nargs="+", help="run.py tags whose fold scores are averaged (one or more)")
    parser.add_argument("--weights", default=DEFAULT_WEIGHTS, help="the docking score's weights a fold chooses from")
    parser.add_argument("--weight", type=float, default=None, help="one weight for every fold (no choice)")
    parser.add_argument("--work", type=Path, default=ROOT / "studies" / "corpus" / "work")
    parser.add_argument("--peer-scores", type=Path, default=ROOT / "studies/peers/results/corpus_gnina.csv")
    parser.add_argument("--peer-columns", default=DEFAULT_PEER_COLUMNS, help="as run.py's (the teacher is gnina)")
    parser.add_argument("--results", type=Path, default=ROOT / "studies" / "distill" / "results")
    parser.add_argument("--n-boot", type=int, default=2000)
    parser.add_argument(
        "--score-from",
        default=None,
        metavar="PEER",
        help="rank a peer's score (a --peer-columns name, e.g. gnina) with the docking score instead of the "
        "members' (the members then give the folds' poses only): the same consensus for another ranker",
    )
    args = parser.parse_args(argv)
    if args.tag in args.members:
        parser.error(f"the consensus's tag {args.tag!r} is also a member's: its JSON would replace the member's")
    try:
        weights = [float(w) for w in args.weights.split(",") if w.strip()]
    except ValueError:
        parser.error(f"--weights {args.weights!r}: comma-separated numbers expected")
    if args.weight is not None:
        weights = [args.weight]
    if not weights or any(not np.isfinite(w) or w < 0 for w in weights):
        parser.error(f"--weights {args.weights!r}: finite weights >= 0 expected")
    peers, names = peer_table(args)
    means = {fold: mean_of(tables) for fold, tables in member_scores(args.work, args.members).items()}
    if args.score_from is not None:
        if args.score_from not in names:
            parser.error(f"--score-from {args.score_from!r}: not a peer of --peer-columns ({', '.join(names)})")
        means = {
            fold: with_peers(table, peers).assign(pecan_score=lambda t: t[args.score_from]).drop(columns=list(names))
            for fold, table in means.items()
        }
    chosen = choose_weights(means, weights)
    folds, pooled, probabilities = {}, [], []
    for fold, scores in means.items():
        fused = with_peers(consensus(scores, chosen[fold]), peers)
        pooled.append(fused)
        probabilities.append(scores)
        folds[fold] = summarize(fused, args.n_boot, peers=names)
        folds[fold]["per_complex"] = complex_table(fused, names).to_dict("index")
        folds[fold]["docking_weight"] = chosen[fold]
    together = pd.concat(probabilities, ignore_index=True)
    summary = summarize(pd.concat(pooled, ignore_index=True), args.n_boot, peers=names)
    summary["model_auc"] = roc_auc(together["pecan_score"].to_numpy(), together["label"].to_numpy().astype(int))
    result = {
        "tag": args.tag,
        "members": args.members,
        "score_from": args.score_from or "the members' mean probability",
        "docking_weights": chosen,
        "weights_from": weights,
        "model_auc_of": "the members' mean probability (the consensus ranks within a ligand)",
        "folds": folds,
        "pooled": summary,
        "peers": list(names),
        "held_out": teacher_agreement(pd.concat(pooled, ignore_index=True), first_agreement),
    }
    out = args.results / f"{args.tag}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1, default=lambda value: value.item()))
    top1 = summary["model_top1"]
    print(
        f"{args.tag}: top-1 {top1['hits']}/{summary['complexes']} over {len(folds)} fold(s), docking weights "
        f"{', '.join(f'{fold}: {w:g}' for fold, w in chosen.items())}; wrote {out}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
