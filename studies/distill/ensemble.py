"""Score held-out folds with an ensemble of finished run.py runs: the mean of their probabilities per pose.

GNINA 1.0's default is an ensemble of five CNNs, and it ranks 404 of the corpus's 604 complexes against its
single default2018 model's 375. This asks the same of PECAN's students: each member is a run.py tag (seeds of
one student, or different students) whose folds have finished on the same held-out poses; the ensemble scores
each pose by the mean of the members' scores (run.py's own seed ensemble) and writes a results JSON in run.py's
format (``<out-tag>.json``, with every member's pooled top-1), which transfer.py and fit.py's tables read.

    python -m studies.distill.ensemble d_klns20_x3 d_klns20 d_klns20_s1 d_klns20_s2
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import pandas as pd

from pecan.redock.ranking import complex_table, summarize
from pecan.scoring.scores_csv import read_scores
from studies.distill.fit import first_agreement
from studies.realdock.peers import DEFAULT_PEER_COLUMNS, peer_table, with_peers
from studies.realdock.run import ensemble

ROOT = Path(__file__).resolve().parents[2]


def teacher_agreement(scores: pd.DataFrame, first_agreement) -> dict:
    """On the held-out complexes (two or more poses): how often the first pose is the teacher's (GNINA 1.0,
    the ``gnina`` peer column), and the median per-complex Spearman with the teacher."""
    held_out = first_agreement(scores, "gnina")
    return {
        "teacher_first": float(held_out["agrees"].mean()),
        "teacher_spearman_median": float(held_out["spearman"].median()),
    }


def finished_folds(work: Path, tag: str) -> set[str]:
    """The folds run.py has finished for ``tag`` (its scores stamp is written after the scores)."""
    return {path.parent.name for path in work.glob(f"folds/*/{tag}_scores.json")}


def member_scores(work: Path, members: list[str]) -> dict[str, list[pd.DataFrame]]:
    """fold -> every member's held-out scores table; the members must have finished the same folds."""
    folds = {member: finished_folds(work, member) for member in members}
    common = set.intersection(*folds.values())
    if not common:
        named = ", ".join(members)
        raise SystemExit(f"error: no fold under {work / 'folds'} has been finished by every member ({named})")
    every = set.union(*folds.values())
    for member, done in folds.items():
        if done != every:  # another member finished it: the ensemble would be scored on fewer folds
            missing = ", ".join(sorted(every - done))
            raise SystemExit(f"error: {member} has not finished fold(s) {missing} (no scores stamp)")
    return {fold: [read_scores(work / "folds" / fold / f"{m}_scores.csv") for m in members] for fold in sorted(common)}


def main(argv=None) -> int:
    """Every fold's ensemble, the pooled figures and each member's own pooled top-1, one JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tag", help="the ensemble's name: <results>/<tag>.json")
    parser.add_argument("members", nargs="+", help="run.py tags whose fold scores are averaged (two or more)")
    parser.add_argument("--work", type=Path, default=ROOT / "studies" / "corpus" / "work")
    parser.add_argument("--peer-scores", type=Path, default=ROOT / "studies/peers/results/corpus_gnina.csv")
    parser.add_argument("--peer-columns", default=DEFAULT_PEER_COLUMNS, help="as run.py's (the teacher is gnina)")
    parser.add_argument("--results", type=Path, default=ROOT / "studies" / "distill" / "results")
    parser.add_argument("--n-boot", type=int, default=2000)
    args = parser.parse_args(argv)
    if len(set(args.members)) < 2:
        parser.error("an ensemble needs two or more distinct members")
    if args.tag in args.members:
        parser.error(f"the ensemble's tag {args.tag!r} is also a member's: its JSON would replace the member's")
    peers, names = peer_table(args)  # run.py's peers, checked as run.py checks them
    folds, pooled, alone = {}, [], {member: [] for member in args.members}
    for fold, runs in member_scores(args.work, args.members).items():
        for member, run in zip(args.members, runs):
            alone[member].append(run)
        scores = with_peers(ensemble(runs), peers)
        pooled.append(scores)
        folds[fold] = summarize(scores, args.n_boot, peers=names)
        folds[fold]["per_complex"] = complex_table(scores, names).to_dict("index")
    result = {
        "tag": args.tag,
        "members": args.members,
        "folds": folds,
        "pooled": summarize(pd.concat(pooled, ignore_index=True), args.n_boot, peers=names),
        "peers": list(names),
        "members_top1": {
            member: int(complex_table(pd.concat(runs, ignore_index=True))["model_top1"].sum())
            for member, runs in alone.items()
        },
        "held_out": teacher_agreement(pd.concat(pooled, ignore_index=True), first_agreement),
        "members_held_out": {
            member: teacher_agreement(with_peers(pd.concat(runs, ignore_index=True), peers), first_agreement)
            for member, runs in alone.items()
        },
    }
    out = args.results / f"{args.tag}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1, default=lambda value: value.item()))
    pooled_top1 = result["pooled"]["model_top1"]
    each = ", ".join(f"{m} {hits}" for m, hits in result["members_top1"].items())
    print(
        f"{args.tag}: top-1 {pooled_top1['hits']}/{result['pooled']['complexes']} over {len(folds)} fold(s), "
        f"pose AUC {result['pooled']['model_auc']:.3f}, teacher's first pose {result['held_out']['teacher_first']:.3f} "
        f"(members alone: {each}); wrote {out}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
