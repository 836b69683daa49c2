"""Leave-one-family-out rescoring benchmark on the redocked crystal complexes of studies/realdock.

    python -m studies.realdock.run [--config configs/redock.yaml] [--set KEY=VALUE ...] [--tag NAME] [--seeds 0,1,2]
                                      [--families kinase,protease] [--work WORK_DIR]

Converts each complex of docked/manifest.csv into shards (once; reused), then for each family: trains the
recipe on the other families (``python main_app.py CONFIG``), scores the held-out family with
``pecan predict --config`` and compares the model's ranking of each complex's poses with the docking score's
on the same poses. Writes studies/realdock/results/<tag>.json (every fold and the pooled figures) and prints
the Markdown table of BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import yaml

from pecan.config import load as load_config
from pecan.data.index import split_by_complex
from pecan.data.layout import write_index_csv
from pecan.redock.ranking import complex_table, summarize
from pecan.scoring.scores_csv import read_scores
from studies.realdock.conversion import convert
from studies.realdock.peers import (
    DEFAULT_PEER_COLUMNS,
    PEER_HEADER,
    check_peer_poses,
    check_scored_poses,
    peer_row,
    peer_table,
    with_peers,
)
from studies.realdock.teacher import with_teacher

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]


def parse_args(argv=None) -> argparse.Namespace:
    """Command-line options."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", type=Path, default=ROOT / "configs" / "redock.yaml", help="the recipe")
    parser.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="config override for every fold (repeatable)",
    )
    parser.add_argument("--tag", default="recipe", help="names the results file and the fold run directories")
    parser.add_argument("--docked", type=Path, default=HERE / "docked", help="output directory of pecan redock")
    parser.add_argument("--work", type=Path, default=HERE / "work", help="shards, fold runs and results")
    parser.add_argument("--families", default="", help="comma-separated held-out groups (default: all)")
    parser.add_argument(
        "--group-column",
        default="family",
        help="the docked manifest's column whose values are the folds (default family: leave-one-family-out; "
        "studies/corpus uses fold, its cluster-split folds)",
    )
    parser.add_argument("--results", type=Path, default=HERE / "results", help="where <tag>.json goes")
    parser.add_argument("--n-boot", type=int, default=2000, help="bootstrap resamples over complexes")
    parser.add_argument(
        "--seeds",
        default="",
        help="comma-separated train.seed values: each fold trains once per seed and the ensemble (the mean of "
        "the seeds' probabilities) is scored; every seed's own figures go to the JSON too (default: the "
        "recipe's seed, one run)",
    )
    parser.add_argument(
        "--peer-scores",
        type=Path,
        default=None,
        help="per-pose scores of other rankers on the same poses (columns complex_id, pose_id and the score "
        "columns; studies/peers/gnina_score.py writes them): ranked beside the model in the same run",
    )
    parser.add_argument(
        "--test-docked",
        type=Path,
        default=None,
        help="score each held-out fold on this docking output's poses instead (a manifest like pecan redock's, "
        "with the same complex ids and group column, e.g. studies/corpus/qvina): a docking program the model "
        "never trained on",
    )
    parser.add_argument(
        "--train-extra",
        type=Path,
        default=None,
        help="more training poses of the same complexes (a manifest like pecan redock's with the same complex ids "
        "and group column, e.g. studies/corpus/augmented): added to each fold's training complexes, never "
        "scored",
    )
    parser.add_argument(
        "--only",
        type=Path,
        default=None,
        help="a CSV with a complex_id column (e.g. the --peer-scores file): only those docked complexes, so "
        "recipes compared on a growing docking run see the same poses (--test-docked poses are all scored)",
    )
    parser.add_argument(
        "--reuse",
        action="store_true",
        help="reuse a fold's scores when an earlier run of the same tag wrote them with the same config, "
        "settings and training files (e.g. to add --peer-scores to a finished run without training again)",
    )
    parser.add_argument(
        "--peer-columns",
        default=DEFAULT_PEER_COLUMNS,
        help="COLUMN=NAME pairs of --peer-scores to rank (higher = better)",
    )
    parser.add_argument(
        "--teacher",
        default="",
        metavar="PEER_COLUMN",
        help="a --peer-scores column written into every fold's index CSVs as the column `teacher` (docked poses; "
        "crystal poses empty), for --set data.target_column=teacher (docs/distillation.md)",
    )
    parser.add_argument(
        "--teacher-extra",
        type=Path,
        default=None,
        metavar="SCORES_CSV",
        help="the teacher's scores of --train-extra's poses (gnina_score.py's CSV, the --teacher column); "
        "required when both --teacher and --train-extra are given",
    )
    parser.add_argument(
        "--train-fraction",
        type=float,
        default=1.0,
        metavar="F",
        help="train on this fraction of each fold's training complexes (a seeded sample of whole complexes, the "
        "same for every tag; the held-out fold is unchanged): a learning curve over the number of complexes",
    )
    args = parser.parse_args(argv)
    if not 0.0 < args.train_fraction <= 1.0:
        parser.error(f"--train-fraction must be in (0, 1], got {args.train_fraction}")
    return args


def sample_complexes(rows: pd.DataFrame, fraction: float, seed: int = 0) -> pd.DataFrame:
    """The rows of a seeded sample of ``fraction`` of the complexes: the project's complex-level split
    (split_by_complex), so a smaller fraction's sample lies within a larger one's (a nested learning curve)."""
    return rows if fraction >= 1.0 else split_by_complex(rows, fraction, seed)[1]


def fold_csvs(
    index: pd.DataFrame,
    families: dict,
    family: str,
    fold_dir: Path,
    tag: str,
    test_index: pd.DataFrame | None = None,
    extra_index: pd.DataFrame | None = None,
    split: tuple[float, int] = (0.15, 0),
    train_fraction: float = 1.0,
) -> tuple[Path, Path, int]:
    """Index CSVs of the training families and of the held-out one (named by tag: recipes may run at once), and
    the held-out complexes' count; the held-out poses come from ``test_index`` when given (another pose source
    of the same complexes); ``extra_index`` adds training poses of the training families' complexes only, whose
    validation complexes (``split``: the recipe's val_fraction and split_seed) then go to <tag>_val.csv;
    ``train_fraction`` keeps a seeded sample of the training complexes (sample_complexes)."""
    fold_dir.mkdir(parents=True, exist_ok=True)
    held_out = index["complex_id"].map(families) == family
    source = index if test_index is None else test_index
    tested = source[source["complex_id"].map(families) == family]
    train, test = fold_dir / f"{tag}_train.csv", fold_dir / f"{tag}_test.csv"
    training = sample_complexes(index[~held_out], train_fraction)
    if extra_index is not None:
        # The validation complexes the recipe's own split would pick (same function, fraction and seed), with
        # their docked poses only, as the held-out fold has: best.pt is not chosen on poses that know the
        # crystal pose. The other training complexes get their extra poses.
        fit, val = split_by_complex(training, split[0], split[1])
        training = pd.concat([fit, extra_index[extra_index["complex_id"].isin(set(fit["complex_id"]))]])
        write_index_csv(val, fold_dir / f"{tag}_val.csv")
    else:
        (fold_dir / f"{tag}_val.csv").unlink(missing_ok=True)  # the recipe's own split, as without extra poses
    write_index_csv(training, train)
    write_index_csv(tested, test)
    return train, test, tested["complex_id"].nunique()


def run_fold(
    args: argparse.Namespace, shards: Path, train: Path, test: Path, fold_dir: Path, seed: str = ""
) -> pd.DataFrame:
    """Train on ``train``, predict ``test`` (with ``train.seed=seed`` when given); returns the scores table."""
    name = f"{args.tag}_seed{seed}" if seed else args.tag
    run_dir = fold_dir / name
    fixed = [
        f"data.data_dir={shards}",
        f"data.train_csvs=[{train}]",
        f"data.test_csvs=[{test}]",
        f"train.out_dir={run_dir}",
        "train.progress=false",
        "train.resume=never",
        "synthetic.enabled=false",
        *([f"train.seed={seed}"] if seed else []),
        *([f"data.val_csvs=[{val}]"] if (val := fold_dir / f"{args.tag}_val.csv").exists() else []),
    ]
    settings = [item for value in [*fixed, *args.overrides] for item in ("--set", value)]
    scores = fold_dir / f"{name}_scores.csv"
    stamp = fold_dir / f"{name}_scores.json"
    inputs = [train, test, *([val] if val.exists() else [])]
    identity = {
        "config": Path(args.config).read_text(),
        "settings": settings,
        "inputs": {str(path): hashlib.sha256(path.read_bytes()).hexdigest() for path in inputs},
    }
    if args.reuse and scores.exists() and stamp.exists() and json.loads(stamp.read_text()) == identity:
        print(f"{fold_dir.name}: reusing {scores}", flush=True)
        return read_scores(scores)
    stamp.unlink(missing_ok=True)
    main_app = str(ROOT / "main_app.py")
    with open(fold_dir / f"{name}.log", "w") as log:
        subprocess.run(
            [sys.executable, main_app, str(args.config), *settings],
            check=True,
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=ROOT,
        )
        checkpoint = run_dir / "checkpoints" / "best.pt"
        if not checkpoint.exists():
            checkpoint = run_dir / "checkpoints" / "last.pt"
        subprocess.run(
            [sys.executable, "-m", "pecan", "predict", str(checkpoint), "--config", str(args.config), *settings]
            + ["--out", str(scores)],
            check=True,
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=ROOT,
        )
    stamp.write_text(json.dumps(identity))
    return read_scores(scores)


def ensemble(runs: list[pd.DataFrame]) -> pd.DataFrame:
    """The first run's table with ``pecan_score`` replaced by the mean of every run's score of the same pose."""
    keys = ["complex_id", "pose_id"]
    poses = [set(zip(run["complex_id"], run["pose_id"])) for run in runs]
    if any(p != poses[0] or len(run) != len(p) for p, run in zip(poses, runs)):
        raise ValueError("the seeds' score tables do not hold the same poses (each once)")
    scores = pd.concat([run[keys + ["pecan_score"]] for run in runs]).groupby(keys, sort=False)["pecan_score"].mean()
    return runs[0].drop(columns="pecan_score").merge(scores.reset_index(), on=keys, how="left", validate="one_to_one")


def seed_spread(per_seed: dict[str, list[pd.DataFrame]], n_boot: int) -> dict:
    """Every seed's pooled figures and per-complex hits, and the range of its top-1 and top-3 rates over the
    seeds."""
    pooled = {}
    for seed, runs in per_seed.items():
        frame = pd.concat(runs, ignore_index=True)
        pooled[seed] = {**summarize(frame, n_boot), "per_complex": complex_table(frame).to_dict("index")}
    spread = {
        key: [min(p[key]["rate"] for p in pooled.values()), max(p[key]["rate"] for p in pooled.values())]
        for key in ("model_top1", "model_top3")
    }
    return {"pooled": pooled, "range": spread}


def row(name: str, result: dict) -> str:
    """One Markdown table row: rates with their 95% intervals."""

    def cell(key):
        item = result[key]
        return (
            f"{item['hits']}/{result['complexes']} ({100 * item['rate']:.0f}% [{100 * item['ci95'][0]:.0f}, "
            f"{100 * item['ci95'][1]:.0f}])"
        )

    diff = result["top1_difference"]
    return (
        f"| {name} | {result['complexes']} | {cell('model_top1')} | {cell('docking_top1')} | {cell('model_top3')} "
        f"| {cell('docking_top3')} | {cell('ceiling')} | {100 * diff['mean']:+.0f} [{100 * diff['ci95'][0]:+.0f}, "
        f"{100 * diff['ci95'][1]:+.0f}] | {result['model_auc']:.2f} / {result['docking_auc']:.2f} |"
    )


TABLE_HEADER = (
    "| held-out family | complexes | model top-1 | docking top-1 | model top-3 | docking top-3 | ceiling "
    "| top-1 difference (pp) | AUC model / docking |\n|---|---|---|---|---|---|---|---|---|"
)


def main(argv=None) -> int:
    """Every fold, the pooled figures, the JSON and the table."""
    args = parse_args(argv)
    if args.teacher and args.train_extra is not None and args.teacher_extra is None:
        raise SystemExit(
            "error: --teacher with --train-extra needs the extra poses' teacher scores: give --teacher-extra"
        )
    only = None
    if args.only is not None:
        only = set(pd.read_csv(args.only, dtype=str, keep_default_na=False, usecols=["complex_id"])["complex_id"])
    # One data directory (the work directory) for both pose sources, whose complex ids are the same.
    shards = args.work
    index = convert(args.docked, args.work / "shards", only)
    index["shard"] = "shards/" + index["shard"]
    if args.teacher:
        if args.peer_scores is None:
            raise SystemExit("error: --teacher names a column of --peer-scores: give --peer-scores")
        index = with_teacher(index, args.peer_scores, args.teacher)
    test_index = None
    if args.test_docked is not None:
        # every complex of the other source: --only restricts what the model trains on
        test_index = convert(args.test_docked, args.work / f"shards_{args.test_docked.name}")
        test_index["shard"] = f"shards_{args.test_docked.name}/" + test_index["shard"]
    recipe = load_config(args.config, args.overrides)
    extra_index = None
    if args.train_extra is not None:
        extra_index = convert(args.train_extra, args.work / f"shards_{args.train_extra.name}", only)
        extra_index["shard"] = f"shards_{args.train_extra.name}/" + extra_index["shard"]
        # the complex's crystal pose is in the docked index already (one row per pose id)
        extra_index = extra_index[pd.to_numeric(extra_index["is_crystal"], errors="coerce").fillna(0) == 0]
        if args.teacher:
            check_scored_poses(args.teacher_extra, args.train_extra, set(extra_index["complex_id"]))
            extra_index = with_teacher(extra_index, args.teacher_extra, args.teacher)
    manifest = pd.read_csv(args.docked / "manifest.csv", dtype=str, keep_default_na=False)
    if args.group_column not in manifest.columns:
        raise SystemExit(f"error: {args.docked / 'manifest.csv'} has no column {args.group_column!r} (--group-column)")
    families = dict(zip(manifest["complex_id"], manifest[args.group_column]))
    if args.test_docked is not None:  # complexes docked only by the other program keep their own fold
        other = pd.read_csv(args.test_docked / "manifest.csv", dtype=str, keep_default_na=False)
        families = {**dict(zip(other["complex_id"], other[args.group_column])), **families}
    chosen = [f for f in args.families.split(",") if f] or sorted(set(families.values()))
    seeds = [s.strip() for s in args.seeds.split(",") if s.strip()] or [""]
    peers, peer_names = peer_table(args)
    if peers is not None:
        check_peer_poses(args, set((index if test_index is None else test_index)["complex_id"]))
    folds, pooled, per_seed = {}, [], {seed: [] for seed in seeds}
    for family in chosen:
        fold_dir = args.work / "folds" / family
        train, test, tested = fold_csvs(
            index,
            families,
            family,
            fold_dir,
            args.tag,
            test_index,
            extra_index,
            (recipe.data.val_fraction, recipe.data.split_seed),
            args.train_fraction,
        )
        if not tested:
            print(f"fold {family}: no held-out complex in {args.test_docked}; skipped", flush=True)
            continue
        runs = [run_fold(args, shards, train, test, fold_dir, seed) for seed in seeds]
        for seed, run in zip(seeds, runs):
            per_seed[seed].append(run)
        scores = with_peers(ensemble(runs), peers)
        scores["family"] = family
        pooled.append(scores)
        folds[family] = summarize(scores, args.n_boot, peers=peer_names)
        folds[family]["per_complex"] = complex_table(scores, peer_names).to_dict("index")
        print(row(family, folds[family]), flush=True)
    result = {
        "tag": args.tag,
        "config": str(args.config),
        "overrides": args.overrides,
        "recipe": yaml.safe_load(Path(args.config).read_text()),
        "folds": folds,
        "pooled": summarize(pd.concat(pooled, ignore_index=True), args.n_boot, peers=peer_names),
        "peers": list(peer_names),
        "seeds": [int(seed) for seed in seeds if seed],
    }
    if len(seeds) > 1:
        result["per_seed"] = seed_spread(per_seed, args.n_boot)
    out = args.results / f"{args.tag}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1, default=lambda value: value.item()))  # numpy scalars
    print("\n" + TABLE_HEADER)
    for family, values in folds.items():
        print(row(family, values))
    print(row("**pooled**", result["pooled"]))
    if peer_names:
        print("\n" + PEER_HEADER)
        for family, values in [*folds.items(), ("**pooled**", result["pooled"])]:
            for peer in peer_names:
                print(peer_row(family, values, peer))
    if len(seeds) > 1:
        low, high = result["per_seed"]["range"]["model_top1"]
        print(f"\nensemble of seeds {args.seeds}; single-seed pooled model top-1 {100 * low:.0f}-{100 * high:.0f}%")
    print(f"\nwrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
