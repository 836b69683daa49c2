"""The expected figures of one model of a recipe whose seed is not chosen: the per-complex hits of several seeds'
results (run.py's, ensemble.py's or consensus.py's JSON, on the same complexes) averaged into one results JSON, so
that transfer.py pairs "a seed of this recipe" with Vina and the recipe over complexes (a hit is then the share
of seeds that ranked the complex right).

    python -m studies.distill.seed_mean d_klns20_v1 /tmp/consensus/d_klns20{,_s1,_s2}_v.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def mean_of(results: list[dict]) -> dict:
    """The first result's folds with every per-complex value the mean over ``results`` (the same complexes in
    the same folds: SystemExit naming the first that differs)."""
    first = results[0]
    folds = {}
    for fold, content in first["folds"].items():
        tables = [result["folds"].get(fold, {}).get("per_complex") for result in results]
        if any(table is None or set(table) != set(content["per_complex"]) for table in tables):
            raise SystemExit(f"error: the results do not hold the same complexes in fold {fold}")
        per_complex = {
            name: {key: sum(table[name][key] for table in tables) / len(tables) for key in hits}
            for name, hits in content["per_complex"].items()
        }
        folds[fold] = {"per_complex": per_complex}
    auc = sum(result["pooled"]["model_auc"] for result in results) / len(results)
    return {"folds": folds, "pooled": {"model_auc": auc}}


def main(argv=None) -> int:
    """Average the results files into <results>/<tag>.json."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tag", help="the averaged results' name: <results>/<tag>.json")
    parser.add_argument("inputs", type=Path, nargs="+", help="results JSONs of the seeds")
    parser.add_argument("--results", type=Path, default=ROOT / "studies" / "distill" / "results")
    args = parser.parse_args(argv)
    if len(args.inputs) < 2:
        parser.error("two or more results files are averaged")
    result = {"tag": args.tag, "seeds_of": [str(path) for path in args.inputs]}
    result.update(mean_of([json.loads(path.read_text()) for path in args.inputs]))
    out = args.results / f"{args.tag}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1))
    print(f"{args.tag}: the mean of {len(args.inputs)} results over {len(result['folds'])} fold(s); wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
