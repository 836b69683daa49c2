"""Train the shipped model on the redocked complexes of the corpus and write it, with its model card, into
pecan/pretrained/ (what `pecan score` uses when no checkpoint is given).

    python -m studies.corpus.ship [--config configs/redock.yaml] [--set KEY=VALUE ...] [--results RESULTS.json]
    python -m studies.corpus.ship --card-only --results RESULTS.json   # rewrite the card of the shipped model
    python -m studies.corpus.ship --only studies/corpus/c608.csv --peer-scores studies/peers/results/corpus_gnina.csv \
        --teacher cnn_score_default --docking-weight 1 --set ...          # a student of GNINA's scores (BENCHMARKS)

Converts every docked complex (studies/corpus/docked, once; shared with run.py's work/shards), trains the
recipe on them (the recipe's val_fraction holds out complexes to choose best.pt; no fold is held out: the
cluster-split figures of the same recipe come from run.py and go into the card with --results), keeps only
what scoring needs from best.pt (no optimizer, scheduler or RNG state) and writes MODEL_CARD.md from the
checkpoint itself (its counts of complexes and poses and its config block are the checkpoint's own record, and the
run config it keeps names paths relative to the repository: no build machine's folders) and shipped.json (the
checkpoint's name and the consensus weight `pecan score` uses by default, --docking-weight).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import pandas as pd

from pecan.data.layout import write_index_csv
from pecan.pretrained import CARD, CHECKPOINT, SHIPPED
from release.card import card_text
from release.checkpoint import slim_checkpoint
from studies.realdock.conversion import convert
from studies.realdock.teacher import with_teacher

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]


def parse_args(argv=None) -> argparse.Namespace:
    """Command-line options."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", type=Path, default=ROOT / "configs" / "redock.yaml", help="the recipe")
    parser.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--docked", type=Path, default=HERE / "docked", help="output directory of pecan redock")
    parser.add_argument("--work", type=Path, default=HERE / "work", help="shards and the training run")
    parser.add_argument("--results", type=Path, default=None, help="run.py's JSON of the same recipe (figures)")
    parser.add_argument("--only", type=Path, default=None, help="a CSV with a complex_id column: only those complexes")
    parser.add_argument("--peer-scores", type=Path, default=None, help="per-pose scores holding --teacher's column")
    parser.add_argument(
        "--teacher",
        default=None,
        metavar="PEER_COLUMN",
        help="a --peer-scores column entered as the index column `teacher` (as run.py --teacher), for "
        "--set data.target_column=teacher",
    )
    parser.add_argument("--seed", type=int, default=None, help="train.seed of the run (its own run directory)")
    parser.add_argument(
        "--docking-weight",
        type=float,
        default=0.0,
        help="the shipped consensus weight with the docking score (pecan score's default --docking-weight), "
        "written to shipped.json beside --out",
    )
    parser.add_argument("--out", type=Path, default=CHECKPOINT, help="where the checkpoint goes")
    parser.add_argument(
        "--card-only",
        action="store_true",
        help="train nothing: rewrite the model card of the checkpoint at --out (e.g. with new --results figures); "
        "the recipe and overrides must be the ones it was trained with",
    )
    return parser.parse_args(argv)


def train(args: argparse.Namespace, shards: Path, index: Path) -> Path:
    """Train the recipe on ``index``; returns best.pt."""
    run_dir = args.work / ("ship" if args.seed is None else f"ship_s{args.seed}")
    fixed = [
        f"data.data_dir={shards}",
        f"data.train_csvs=[{index}]",
        f"train.out_dir={run_dir}",
        "train.progress=false",
        "train.resume=never",
        "train.plots=false",
        "synthetic.enabled=false",
        *([f"train.seed={args.seed}"] if args.seed is not None else []),
    ]
    settings = [item for value in [*fixed, *args.overrides] for item in ("--set", value)]
    with open(args.work / f"{run_dir.name}.log", "w") as log:
        subprocess.run(
            [sys.executable, str(ROOT / "main_app.py"), str(args.config), *settings],
            check=True,
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=ROOT,
        )
    return run_dir / "checkpoints" / "best.pt"


def main(argv=None) -> int:
    """Convert, train, slim, write the card (``--card-only``: the card alone, from the checkpoint's own record)."""
    args = parse_args(argv)
    if args.card_only and not args.out.is_file():
        print(f"error: --card-only: no checkpoint at {args.out}", file=sys.stderr)
        return 2
    if not args.card_only:
        shards = args.work / "shards"
        index = args.work / ("ship_all.csv" if args.seed is None else f"ship_s{args.seed}_all.csv")
        only = None
        if args.only is not None:
            only = set(pd.read_csv(args.only, dtype=str, keep_default_na=False)["complex_id"])
        table = convert(args.docked, shards, only)
        if args.teacher:
            if args.peer_scores is None:
                print("error: --teacher names a column of --peer-scores: give --peer-scores", file=sys.stderr)
                return 2
            table = with_teacher(table, args.peer_scores, args.teacher)
        write_index_csv(table, index)
        slim_checkpoint(train(args, shards, index), args.out, root=ROOT)
    excluded = pd.read_csv(HERE / "excluded.csv", dtype=str, keep_default_na=False)
    results = json.loads(args.results.read_text()) if args.results else None
    card = args.out.parent / CARD.name
    recipe = str(args.config.resolve().relative_to(ROOT))
    text = card_text(args.out, excluded, results, recipe, args.overrides, args.teacher, args.docking_weight)
    card.write_text(text)
    shipped = {"checkpoints": [args.out.name], "docking_weight": args.docking_weight}
    (args.out.parent / SHIPPED.name).write_text(json.dumps(shipped, indent=1) + "\n")
    print(f"wrote {args.out} ({args.out.stat().st_size / 1e6:.2f} MB), {card} and {SHIPPED.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
