"""studies/corpus/potential.py: the control learners beside Vina's score (atom types, pair counts, the
fold-wise listwise fit)."""

import numpy as np
import pandas as pd
import pytest

from pecan.data import layout
from studies.corpus import potential


def atom(element: int, *, ligand: bool, xyz=(0.0, 0.0, 0.0), hydrophobic=0, acceptor=0, donor=0) -> np.ndarray:
    row = np.zeros(layout.N_COLUMNS, dtype=np.float32)
    row[:3] = xyz
    if element >= 0:
        row[potential.ELEMENT.start + element] = 1
    row[layout.MOLCODE_COLUMN] = 1 if ligand else -1
    row[potential.HYDROPHOBIC], row[potential.ACCEPTOR], row[potential.DONOR] = hydrophobic, acceptor, donor
    return row


def test_atom_types_follow_element_and_flags():
    rows = np.stack(
        [
            atom(1, ligand=True, hydrophobic=1),  # hydrophobic carbon
            atom(1, ligand=True),  # polar carbon
            atom(2, ligand=True, donor=1, acceptor=1),  # N donor and acceptor
            atom(3, ligand=True, acceptor=1),  # O acceptor only
            atom(3, ligand=True),  # O neither
            atom(5, ligand=True),  # S
            atom(7, ligand=True),  # halogen
            atom(8, ligand=False),  # metal
            atom(-1, ligand=False),  # no element bit
        ]
    )
    assert potential.atom_types(rows).tolist() == [0, 1, 2, 8, 9, 10, 12, 13, 14]


def test_pair_counts_bin_each_ligand_protein_pair_once():
    rows = np.stack(
        [
            atom(3, ligand=True, acceptor=1),  # type 8
            atom(2, ligand=False, xyz=(3.2, 0, 0), donor=1),  # type 3, 3.2 A: bin 2 (3.0-3.5)
            atom(1, ligand=False, xyz=(9.0, 0, 0)),  # beyond 8 A: not counted
        ]
    )
    counts = potential.pair_counts(rows)
    assert counts.sum() == 1
    assert counts[(8 * potential.N_TYPES + 3) * potential.N_BINS + 2] == 1


def synthetic(complexes: int = 40, poses: int = 5) -> tuple[pd.DataFrame, np.ndarray]:
    """Every complex: pose 0 near-native but 1 kcal/mol worse than pose 1, which Vina ranks first; feature 0
    marks the near-native pose, feature 1 is noise."""
    rng = np.random.default_rng(0)
    rows, features = [], []
    for c in range(complexes):
        for p in range(poses):
            gap = 1.0 if p == 0 else (0.0 if p == 1 else 2.0 + p)
            rows.append({"complex_id": f"c{c}", "fold": c % 2, "gap": gap, "docking_score": -9 + gap, "label": p == 0})
            features.append([float(p == 0), rng.normal()])
    return pd.DataFrame(rows).astype({"label": float}), np.array(features)


def test_the_fit_learns_what_vina_misses_and_strong_l2_gives_vinas_ranking():
    frame, features = synthetic()
    learned = frame.assign(learned=potential.cross_validate(frame, features, l2=0.0))
    result = potential.versus_docking(learned, "learned", n_boot=200)
    assert (result["docking_top1"], result["top1"], result["complexes"]) == (0, 40, 40)
    assert result["difference"] == pytest.approx(1.0)
    vina_like = frame.assign(learned=potential.cross_validate(frame, features, l2=1e6))
    assert potential.versus_docking(vina_like, "learned", n_boot=200)["top1"] == 0
