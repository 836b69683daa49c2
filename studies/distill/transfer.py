"""Transfer of a student to held-out protein clusters: top-1 on all complexes and on the PoseBusters part, each
against Vina and against the recipe with paired bootstrap intervals over complexes.

    python -m studies.distill.transfer studies/distill/results/TAG.json [...] \
        --baseline studies/corpus/results/c608_base.json

The PoseBusters part (complexes whose source is posebusters in studies/corpus/sources.csv) was released after
GNINA's training data, so it is the clean test of a student against its teacher.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from pecan.redock.ranking import bootstrap_interval

ROOT = Path(__file__).resolve().parents[2]

SOURCES = ROOT / "studies" / "corpus" / "sources.csv"
PEERS = ("docking_top1", "gnina_top1", "gnina2018_top1")


def per_complex(path: Path) -> dict:
    """complex -> its hits (model, docking score, peers), over every fold of a results file."""
    folds = json.loads(path.read_text())["folds"]
    return {name: hits for fold in folds.values() for name, hits in fold["per_complex"].items()}


def paired(a: dict, b: dict, complexes: list[str], column_a: str, column_b: str, n_boot: int) -> dict:
    """Mean of b[column_b] - a[column_a] over ``complexes`` (pp) and its 95% bootstrap interval."""
    difference = np.array([b[c][column_b] - a[c][column_a] for c in complexes], dtype=float)
    draws = np.random.default_rng(0).integers(0, len(complexes), size=(n_boot, len(complexes)))
    low, high = bootstrap_interval(difference, draws)
    return {"mean": 100 * float(difference.mean()), "ci95": [100 * low, 100 * high]}


def _count(hits) -> int | float:
    """The number of hits: an integer, or the mean over seeds (seed_mean.py) to one decimal."""
    total = sum(hits)
    return int(total) if float(total).is_integer() else round(float(total), 1)


def part_summary(student: dict, baseline: dict, complexes: list[str], n_boot: int) -> dict:
    """Hits of the student and the peers on ``complexes``, the student against Vina and against the recipe."""
    out = {"complexes": len(complexes), "model_top1": _count(student[c]["model_top1"] for c in complexes)}
    for column in PEERS:
        out[column] = _count(student[c][column] for c in complexes)
    out["recipe_top1"] = _count(baseline[c]["model_top1"] for c in complexes)
    out["model_minus_vina"] = paired(student, student, complexes, "docking_top1", "model_top1", n_boot)
    out["model_minus_recipe"] = paired(baseline, student, complexes, "model_top1", "model_top1", n_boot)
    return out


def _cell(part: dict) -> str:
    vina, recipe = part["model_minus_vina"], part["model_minus_recipe"]
    return (
        f"{part['model_top1']}/{part['complexes']} (recipe {part['recipe_top1']}, Vina {part['docking_top1']}, "
        f"GNINA {part['gnina_top1']}, default2018 {part['gnina2018_top1']}) | {vina['mean']:+.1f} "
        f"[{vina['ci95'][0]:+.1f}, {vina['ci95'][1]:+.1f}] | {recipe['mean']:+.1f} "
        f"[{recipe['ci95'][0]:+.1f}, {recipe['ci95'][1]:+.1f}]"
    )


def main(argv=None) -> int:
    """One row per results file and part; the JSON beside the first results file (transfer.json)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", type=Path, nargs="+")
    parser.add_argument("--baseline", type=Path, default=ROOT / "studies" / "corpus" / "results" / "c608_base.json")
    parser.add_argument("--n-boot", type=int, default=5000)
    parser.add_argument("--out", type=Path, default=None, help="the JSON (default: print only)")
    args = parser.parse_args(argv)
    sources = pd.read_csv(SOURCES, dtype=str, keep_default_na=False)
    posebusters = set(sources.loc[sources["source"] == "posebusters", "complex_id"])
    baseline = per_complex(args.baseline)
    summary = {}
    print("| student (results) | part | top-1 | − Vina (pp) | − recipe (pp) | pose AUC |")
    print("|---|---|---|---|---|---|")
    for path in args.results:
        student = per_complex(path)
        shared = sorted(set(student) & set(baseline))
        parts = {"all": shared, "posebusters": [c for c in shared if c in posebusters]}
        summary[path.stem] = {name: part_summary(student, baseline, ids, args.n_boot) for name, ids in parts.items()}
        auc = json.loads(path.read_text())["pooled"]["model_auc"]
        for name, part in summary[path.stem].items():
            print(f"| {path.stem} | {name} | {_cell(part)} | {auc:.3f} |")
    if args.out is not None:
        args.out.write_text(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
