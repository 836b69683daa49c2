#!/usr/bin/env python
"""The complexes where the teacher teaches most: its first pose is near-native and Vina's is not.

    python -m studies.distill.where [--shards studies/corpus/work/shards] \
        [--peer-scores studies/peers/results/corpus_gnina.csv] [--teacher cnn_score_default] \
        [--only studies/corpus/c608.csv] [--out studies/distill/where.csv]

Reads the converted corpus (each complex's ``<id>_all.csv`` under ``--shards``, as ``run.py`` converts it: the
pose's RMSD to the crystal pose and Vina's score) and the teacher's score of every docked pose. A complex is
listed when the teacher's highest-scored pose has RMSD < 2 A and Vina's best-scored pose has not. These are the
complexes that ``studies/corpus/augment.py --only`` gives extra poses and ``gnina_score.py`` scores
(BENCHMARKS.md, "More teacher-scored poses"). The extra poses enter a fold only for its training complexes
(``run.py --train-extra``), so a held-out complex's list membership never reaches its own evaluation.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

from pecan.data.index_rows import read_index_rows
from studies.realdock.teacher import COLUMN as TEACHER
from studies.realdock.teacher import with_teacher

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]

NEAR_NATIVE = 2.0  # A, the corpus's label threshold


def parse_args(argv=None) -> argparse.Namespace:
    """Command-line options."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--shards", type=Path, default=ROOT / "studies/corpus/work/shards")
    parser.add_argument("--peer-scores", type=Path, default=ROOT / "studies/peers/results/corpus_gnina.csv")
    parser.add_argument("--teacher", default="cnn_score_default", help="the --peer-scores column of the teacher")
    parser.add_argument("--only", type=Path, default=ROOT / "studies/corpus/c608.csv", help="complex_id CSV")
    parser.add_argument("--out", type=Path, default=HERE / "where.csv")
    return parser.parse_args(argv)


def poses(shards: Path) -> pd.DataFrame:
    """Every pose of the converted corpus (each complex's ``<id>_all.csv``), under the names code uses."""
    files = sorted(shards.glob("*/*_all.csv"))
    if not files:
        raise SystemExit(f"error: no <complex>/<complex>_all.csv under {shards}: convert the corpus first (run.py)")
    return pd.concat([read_index_rows(f) for f in files], ignore_index=True)


def where(table: pd.DataFrame) -> pd.DataFrame:
    """One row per complex whose teacher-first pose is near-native and whose Vina-first pose is not."""
    rows = []
    for complex_id, group in table.groupby("complex_id", sort=True):
        teacher_first = group.loc[group[TEACHER].idxmax()]
        vina_first = group.loc[group["docking_score"].idxmin()]  # Vina: lower is better
        if teacher_first["rmsd"] < NEAR_NATIVE <= vina_first["rmsd"]:
            rows.append(
                {
                    "complex_id": complex_id,
                    "teacher_first_rmsd": round(float(teacher_first["rmsd"]), 3),
                    "vina_first_rmsd": round(float(vina_first["rmsd"]), 3),
                }
            )
    return pd.DataFrame(rows, columns=["complex_id", "teacher_first_rmsd", "vina_first_rmsd"])


def main(argv=None) -> int:
    """Write the list and say how many complexes it holds."""
    args = parse_args(argv)
    only = set(pd.read_csv(args.only, dtype=str, usecols=["complex_id"])["complex_id"])
    table = poses(args.shards)
    table = with_teacher(table[table["complex_id"].isin(only)], args.peer_scores, args.teacher)
    table = table[pd.to_numeric(table["is_crystal"], errors="coerce").fillna(0) == 0]
    chosen = where(table)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    chosen.to_csv(args.out, index=False)
    print(f"{len(chosen)} of {table['complex_id'].nunique()} complexes: teacher-first near-native, Vina-first not")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
