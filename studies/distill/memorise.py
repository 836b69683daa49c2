"""Can the student fit the teacher at all? Small controlled runs on 100 training complexes it is scored on.

Each lever trains configs/redock.yaml with the teacher's score as the target (train.target_mix 1, the
teacher_kl ranking loss) for 30 epochs on the same 100 complexes of one fold's training set (drawn with a fixed
seed from the training CSV that ``studies/realdock/run.py --teacher`` wrote), which are also its validation set
and its fit-check sample, so every epoch records how well the model has fitted what it was shown: agreement with
the teacher's first pose, the Spearman correlation with the teacher, and top-1 against Vina's (epochs.jsonl's
``fit_*``). The levers change one thing each.

    python -m studies.distill.memorise                       # every lever (about 10 minutes each on one core)
    python -m studies.distill.memorise --levers recipe,no_prior
    python -m studies.distill.memorise --collect             # the JSON from finished runs only
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import pandas as pd

from pecan import report

ROOT = Path(__file__).resolve().parents[2]

WORK = ROOT / "studies" / "corpus" / "work"
TEACHER = ["data.target_column=teacher", "train.target_mix=1", "train.ranking_loss=teacher_kl"]
LEVERS = {
    "label": ["data.target_column=teacher", "train.target_mix=0"],  # the recipe as it is: labels, pairwise
    "recipe": TEACHER,  # the teacher's targets, the recipe otherwise (docking prior 5)
    "lr_0.01": [*TEACHER, "train.lr=0.01"],
    "wide": [*TEACHER, "model.hidden=64", "model.layers=3"],
    "rank_x5": [*TEACHER, "train.ranking_loss_weight=5"],
    "no_prior": [*TEACHER, "model.docking_prior=0"],  # the docking score stays an input
    "no_prior_wide": [*TEACHER, "model.docking_prior=0", "model.hidden=64", "model.layers=3"],
}
FIT = ("fit_teacher_top1", "fit_teacher_spearman", "fit_top1", "fit_docking_top1")


def subset(train_csv: Path, out: Path, complexes: int, seed: int) -> Path:
    """The first ``complexes`` of the training CSV's complexes in a seeded random order, all their rows."""
    rows = pd.read_csv(train_csv, dtype=str, keep_default_na=False)
    chosen = rows["pdbid"].drop_duplicates().sample(complexes, random_state=seed)
    rows[rows["pdbid"].isin(chosen)].to_csv(out, index=False)
    return out


def train(name: str, overrides: list[str], csv: Path, out_dir: Path, epochs: int, complexes: int) -> None:
    """One lever's run (its log beside its run directory)."""
    fixed = [
        f"data.data_dir={WORK}",
        f"data.train_csvs=[{csv}]",
        f"data.val_csvs=[{csv}]",
        f"train.out_dir={out_dir / name}",
        "train.progress=false",
        "train.resume=never",
        "synthetic.enabled=false",
        "train.intra_op_threads=1",
        f"train.fit_check_complexes={complexes}",
        f"train.epochs={epochs}",
    ]
    settings = [item for value in [*fixed, *overrides] for item in ("--set", value)]
    with open(out_dir / f"{name}.log", "w") as log:
        command = [sys.executable, str(ROOT / "main_app.py"), str(ROOT / "configs" / "redock.yaml"), *settings]
        subprocess.run(command, check=True, stdout=log, stderr=subprocess.STDOUT, cwd=ROOT)


def curve(run_dir: Path) -> list[dict]:
    """Per epoch: the fit fields and the training loss."""
    records = report.read_records(run_dir / "epochs.jsonl")
    return [{"epoch": r["epoch"], "train_loss": r.get("train_loss"), **{k: r.get(k) for k in FIT}} for r in records]


def prior_weight(run_dir: Path) -> float | None:
    """The docking prior's learned weight in the run's last.pt (None without a prior)."""
    from pecan.engine.state import CheckpointState

    state = CheckpointState.load(run_dir / "checkpoints" / "last.pt").model
    weights = [float(value) for key, value in state.items() if key.endswith("docking_prior")]
    return weights[0] if weights else None


def main(argv=None) -> int:
    """Run the chosen levers (unless --collect), then write every finished lever's curve to one JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--train-csv", type=Path, default=WORK / "folds" / "0" / "d_kl20_train.csv")
    parser.add_argument("--levers", default=",".join(LEVERS), help=f"comma-separated, of: {', '.join(LEVERS)}")
    parser.add_argument("--complexes", type=int, default=100)
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out-dir", type=Path, default=WORK / "memorise")
    parser.add_argument("--results", type=Path, default=ROOT / "studies" / "distill" / "results" / "memorise.json")
    parser.add_argument("--collect", action="store_true", help="write the JSON from finished runs; train nothing")
    args = parser.parse_args(argv)
    levers = [name for name in args.levers.split(",") if name]
    unknown = sorted(set(levers) - set(LEVERS))
    if unknown:
        parser.error(f"unknown lever(s) {', '.join(unknown)}; known: {', '.join(LEVERS)}")
    args.out_dir.mkdir(parents=True, exist_ok=True)
    csv = args.out_dir / f"subset{args.complexes}.csv"
    if not args.collect:
        subset(args.train_csv, csv, args.complexes, args.seed)
        for name in levers:
            train(name, LEVERS[name], csv, args.out_dir, args.epochs, args.complexes)
    result = {
        name: {
            "overrides": LEVERS[name],
            "epochs": curve(args.out_dir / name),
            "prior_weight_last": prior_weight(args.out_dir / name),
        }
        for name in levers
        if (args.out_dir / name / "epochs.jsonl").exists()
    }
    args.results.parent.mkdir(parents=True, exist_ok=True)
    args.results.write_text(json.dumps(result, indent=1))
    for name, run in result.items():
        last = run["epochs"][-1]
        print(
            f"{name}: epoch {last['epoch']}, teacher-first {last['fit_teacher_top1']:.2f}, "
            f"Spearman {last['fit_teacher_spearman']:.2f}, top-1 {last['fit_top1']:.2f} "
            f"(Vina {last['fit_docking_top1']:.2f})"
        )
    print(f"wrote {args.results}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
