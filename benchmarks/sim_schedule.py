"""How long a redocking of 19,000 complexes takes on N workers under each way of handing out the jobs,
simulated from the corpus's recorded Vina times (studies/corpus/docked/redock.csv, 660 complexes,
exhaustiveness 4), as a ratio to the ideal time (total work / workers).

    python -m benchmarks.sim_schedule [--complexes 19000] [--draws 5] [--out benchmarks/sim_schedule.json]

Each draw picks 19,000 complexes from the 660 with replacement (a manifest in no useful order). Policies:
``fixed share`` (rank k runs jobs k, k+N, ...: pecan.runtime.shares), ``next free`` (each job, in manifest
order, to the first worker that frees up), ``longest first (true)`` (next free, ordered by the true seconds:
the bound), ``longest first (ligand)`` (ordered by the cost pecan ships, pecan.redock.engine.ligand_cost:
heavy atoms x (1 + rotatable bonds), from studies/corpus/sources.csv), ``longest first (heavy atoms)`` and
``longest first (earlier run, 30% noise)`` (an earlier run's seconds, each off by a log-normal factor of
sigma 0.3, as a rerun on other nodes would be). The figures are medians over the draws. Also reported: how
well each predictor ranks the 660 jobs (Spearman's rho against the recorded seconds).
"""

from __future__ import annotations

import argparse
import heapq
from pathlib import Path

import numpy as np
import pandas as pd

from pecan.redock.engine import ligand_cost

ROOT = Path(__file__).resolve().parents[1]
TIMES = ROOT / "studies" / "corpus" / "docked" / "redock.csv"
LIGANDS = ROOT / "studies" / "corpus" / "sources.csv"
WORKERS = (64, 256, 512, 2048)


def corpus() -> pd.DataFrame:
    """complex_id, seconds, ligand_heavy_atoms, rotatable_bonds of every recorded complex."""
    times = pd.read_csv(TIMES)[["complex_id", "seconds"]]
    ligands = pd.read_csv(LIGANDS)[["complex_id", "ligand_heavy_atoms", "rotatable_bonds"]]
    frame = times.merge(ligands, on="complex_id", how="inner")
    if len(frame) != len(times):
        raise ValueError(f"{len(times) - len(frame)} complexes of {TIMES} are not in {LIGANDS}")
    return frame


def next_free(seconds: np.ndarray, workers: int) -> float:
    """Makespan when each job, in the given order, goes to the worker that frees up first."""
    free = [0.0] * workers
    for job in seconds:
        heapq.heappush(free, heapq.heappop(free) + job)
    return max(free)


def fixed_share(seconds: np.ndarray, workers: int) -> float:
    """Makespan when worker k runs jobs k, k + workers, ... (pecan.runtime.shares)."""
    return max(seconds[k::workers].sum() for k in range(workers))


def longest_first(seconds: np.ndarray, cost: np.ndarray, workers: int) -> float:
    """Next free, the jobs ordered by descending ``cost`` (ties in manifest order)."""
    return next_free(seconds[np.argsort(-cost, kind="stable")], workers)


def predictors(frame: pd.DataFrame, rng: np.random.Generator) -> dict[str, np.ndarray]:
    """Each predictor's cost of every corpus complex."""
    heavy, rotatable = frame["ligand_heavy_atoms"].to_numpy(), frame["rotatable_bonds"].to_numpy()
    seconds = frame["seconds"].to_numpy()
    return {
        "longest first (true)": seconds,
        "longest first (ligand)": np.array([ligand_cost(h, r) for h, r in zip(heavy, rotatable)]),
        "longest first (heavy atoms)": heavy.astype(float),
        "longest first (earlier run, 30% noise)": seconds * np.exp(rng.normal(0.0, 0.3, len(seconds))),
    }


def simulate(frame: pd.DataFrame, complexes: int, draws: int) -> dict:
    """The makespan ratios per policy and worker count (medians over ``draws``) and the predictors' rho."""
    seconds = frame["seconds"].to_numpy()
    ratios: dict[str, dict[int, list[float]]] = {}
    rho = {}
    for draw in range(draws):
        rng = np.random.default_rng(draw)
        costs = predictors(frame, rng)
        if draw == 0:
            truth = pd.Series(seconds)
            rho = {name: round(float(pd.Series(c).corr(truth, method="spearman")), 3) for name, c in costs.items()}
        pick = rng.integers(0, len(frame), complexes)
        drawn = seconds[pick]
        for workers in WORKERS:
            ideal = drawn.sum() / workers
            makespans = {"fixed share": fixed_share(drawn, workers), "next free": next_free(drawn, workers)}
            makespans.update({name: longest_first(drawn, cost[pick], workers) for name, cost in costs.items()})
            for name, makespan in makespans.items():
                ratios.setdefault(name, {}).setdefault(workers, []).append(makespan / ideal)
    table = {name: {str(w): round(float(np.median(v)), 2) for w, v in by.items()} for name, by in ratios.items()}
    return {"ratio_to_ideal": table, "spearman_rho": rho}


def main(argv=None) -> int:
    """Print the table and write the JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--complexes", type=int, default=19_000)
    parser.add_argument("--draws", type=int, default=5)
    parser.add_argument("--out", type=Path, default=Path(__file__).with_suffix(".json"))
    args = parser.parse_args(argv)
    frame = corpus()
    result = simulate(frame, args.complexes, args.draws)
    seconds = frame["seconds"]
    result.update(
        complexes=args.complexes,
        draws=args.draws,
        workers=list(WORKERS),
        corpus={
            "complexes": len(frame),
            "median_s": round(float(seconds.median()), 1),
            "mean_s": round(float(seconds.mean()), 1),
            "max_s": round(float(seconds.max()), 1),
        },
        command="python -m benchmarks.sim_schedule" + (" " + " ".join(argv) if argv else ""),
    )
    print("policy | " + " | ".join(f"{w} workers" for w in WORKERS))
    for name, by in result["ratio_to_ideal"].items():
        print(f"{name} | " + " | ".join(f"{by[str(w)]:.2f}" for w in WORKERS))
    print("Spearman rho against the recorded seconds:", result["spearman_rho"])
    from pecan.runtime.fileio import json_text, write_text

    write_text(args.out, json_text(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
