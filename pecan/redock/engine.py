"""Redocking on a distributed engine (pecan.runtime.engine_dask, `pecan redock --engine dask`): the jobs
handed out longest first by a cost known before they run, the seconds an earlier run recorded (its
redock.csv), else the crystal ligand's heavy atoms x (1 + rotatable bonds), so that no long complex starts
last. Measured on the corpus's 660 recorded Vina times (benchmarks/sim_schedule.py):
the ligand's size ranks jobs with Spearman 0.48 (heavy atoms alone 0.56; two 21-atom ligands took 39 min),
which brings 19,000 complexes on 512 workers from 1.47x the ideal time (next free worker, manifest order) to
~1.2x; an earlier run's seconds bring it to 1.00x.
"""

from __future__ import annotations

import logging
import statistics
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator, Sequence

import pandas as pd

from pecan.runtime.engine_dask import DaskEngine

log = logging.getLogger(__name__)


def ligand_cost(heavy_atoms: int, rotatable_bonds: int) -> float:
    """Vina's search grows with the ligand's atoms and its torsions: heavy atoms x (1 + rotatable bonds)."""
    return float(heavy_atoms) * (1 + rotatable_bonds)


def ligand_costs(ligands: Sequence[Path]) -> list[float]:
    """`ligand_cost` of each crystal ligand; one RDKit cannot read costs 0 (it fails at once when docked)."""
    from rdkit.Chem import rdMolDescriptors

    from pecan.redock.prepare import read_crystal

    costs = []
    for path in ligands:
        try:
            mol = read_crystal(Path(path))
            costs.append(ligand_cost(mol.GetNumHeavyAtoms(), rdMolDescriptors.CalcNumRotatableBonds(mol)))
        except Exception:  # noqa: BLE001 - an unreadable ligand is that complex's failure, recorded when it runs
            costs.append(0.0)
    return costs


def recorded_seconds(table: Path) -> dict[str, float]:
    """complex_id -> seconds of an earlier run's redock.csv (its finished and failed complexes; a reused one's
    seconds are those of the run that docked it). A file without the columns is a ValueError naming it."""
    frame = pd.read_csv(table, dtype={"complex_id": str}, keep_default_na=False)
    missing = {"complex_id", "seconds"} - set(frame.columns)
    if missing:
        raise ValueError(f"--costs {table}: no column {', '.join(sorted(missing))} (a redock.csv has both)")
    seconds = pd.to_numeric(frame["seconds"], errors="coerce")
    return {cid: float(s) for cid, s in zip(frame["complex_id"], seconds) if s == s and s >= 0}


def predicted_costs(ids: Sequence[str], ligands: Sequence[Path], table: Path | None = None) -> list[float]:
    """Each job's cost in seconds where ``table`` recorded it, else its ligand cost scaled to seconds by the
    median ratio of the complexes that have both (ligand cost alone without a table)."""
    size = ligand_costs(ligands)
    if table is None:
        return size
    seconds = recorded_seconds(table)
    both = [seconds[cid] / cost for cid, cost in zip(ids, size) if cid in seconds and cost > 0]
    scale = statistics.median(both) if both else 1.0
    known = sum(cid in seconds for cid in ids)
    log.info("costs: %d of %d complexes from %s, the others from their ligand's size", known, len(ids), table)
    return [seconds.get(cid, cost * scale) for cid, cost in zip(ids, size)]


@dataclass(frozen=True)
class RedockEngine:
    """The Dask engine as pecan.redock.run uses it. A complex whose worker died after it finished is docked
    again elsewhere and finds its own record; it still counts as docked by this run (``reused`` False), as in
    one process: every job handed out was unfinished when the run began."""

    engine: DaskEngine

    def describe(self) -> str:
        """The cluster, for the summary."""
        return self.engine.describe()

    @contextmanager
    def results_of(self, function, jobs: list, workers: int = 0) -> Iterator[Iterator[dict]]:
        """The engine's results, each record marked as docked by this run."""
        with self.engine.results_of(function, jobs, workers) as results:
            yield ({**record, "reused": False} for record in results)


def dask_engine(manifest_frame: pd.DataFrame, scheduler_file: Path, table: Path | None = None) -> RedockEngine:
    """The Dask engine for a redocking manifest (pecan.redock.run.read_manifest's frame), ordering its
    complexes by `predicted_costs`."""
    ids = list(manifest_frame["complex_id"])
    costs = dict(zip(ids, predicted_costs(ids, [Path(p) for p in manifest_frame["crystal_ligand"]], table)))
    return RedockEngine(DaskEngine(Path(scheduler_file), cost=lambda job: costs[job.complex_id]))
