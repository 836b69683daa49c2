"""Is recipe B's top-1 better than recipe A's beyond noise? Paired bootstrap over the complexes both scored.

    python -m studies.realdock.compare results/A.json results/B.json [--n-boot 5000]

Prints B - A for model top-1 and top-3 with 95% percentile intervals (resampling complexes, the same
resample for both recipes). A lever is kept when the interval of its top-1 difference lies above 0.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

from pecan.redock.ranking import bootstrap_interval


def per_complex(path: Path) -> dict:
    """complex -> its hits, over every fold of a results file."""
    folds = json.loads(path.read_text())["folds"]
    return {name: hits for fold in folds.values() for name, hits in fold["per_complex"].items()}


def compare(a: dict, b: dict, n_boot: int, seed: int = 0) -> dict:
    """B - A per column over the shared complexes: mean and 95% interval."""
    shared = sorted(set(a) & set(b))
    draws = np.random.default_rng(seed).integers(0, len(shared), size=(n_boot, len(shared)))
    out = {"complexes": len(shared)}
    for column in ("model_top1", "model_top3"):
        difference = np.array([b[c][column] - a[c][column] for c in shared], dtype=float)
        out[column] = {"mean": float(difference.mean()), "ci95": bootstrap_interval(difference, draws)}
    return out


def main(argv=None) -> int:
    """Print the comparison as JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("a", type=Path)
    parser.add_argument("b", type=Path)
    parser.add_argument("--n-boot", type=int, default=5000)
    args = parser.parse_args(argv)
    print(json.dumps(compare(per_complex(args.a), per_complex(args.b), args.n_boot), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
