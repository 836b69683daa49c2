"""Can a low-capacity learner beside Vina's score beat Vina on the corpus? A control for the EGNN's result.

    python -m studies.corpus.potential [--only studies/corpus/c479.csv] [--l2 0,0.01,0.1,1,10]
                                          [--out studies/corpus/results/potential_c479.json]

The EGNN ranks poses as Vina's score does on held-out protein clusters (BENCHMARKS.md "Corpus"). This script
asks the same question of two far smaller models, on the same converted poses and the same cluster-split folds,
so that a failure of the EGNN's training is told apart from a limit of the data:

- ``pairs``: a learned statistical potential, the counts of ligand-protein atom pairs by ligand type, protein
  type (15 types: carbon hydrophobic or polar; nitrogen and oxygen by donor and acceptor flags; S/Se, P,
  halogen, metal, other) and distance bin (9 bins to 8 A), as log(1 + n) and standardised (2,025 weights);
- ``contacts``: 10 hand-made descriptors of the pose (buried and exposed ligand atoms, polar contacts,
  unsatisfied buried polar atoms, hydrophobic-polar mismatches, hydrophobic contacts, close contacts, metal
  contacts).

Each scores a pose as ``theta . features - w * gap`` (gap: the pose's docking score minus its complex's best),
trained per held-out fold on the other folds' poses with the per-complex softmax loss of the near-native poses
(``train.ranking_loss: listwise``'s) plus ``l2 * |theta|^2``, by L-BFGS, from theta = 0, w = 1 (Vina's
ranking). Every ``--l2`` is reported, each against Vina with a paired bootstrap interval; the grid is scanned on
the test folds themselves, so the best value is optimistic. Needs the shards that studies/realdock/run.py
converts (studies/corpus/work/shards; converted here when missing).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import h5py
import numpy as np
import pandas as pd
import torch

from pecan.data import layout
from pecan.redock.ranking import bootstrap_interval, top_k_hits
from studies.realdock.conversion import convert

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]

POSE_GROUP = "pybel/processed/docking"
BIN_EDGES = np.array([0.0, 2.5, 3.0, 3.5, 4.0, 4.5, 5.0, 6.0, 7.0, 8.0])
N_TYPES = 15
N_BINS = len(BIN_EDGES) - 1
CONTACTS = (
    "ligand atoms within 4 A of the protein (fraction)",
    "protein atoms within 6 A per ligand atom / 10",
    "polar ligand atoms with a polar protein atom within 3.5 A / sqrt(n)",
    "buried polar ligand atoms without one / sqrt(n)",
    "hydrophobic ligand atom - polar protein atom pairs within 4 A / n",
    "hydrophobic - hydrophobic pairs within 4.5 A / n",
    "pairs closer than 3 A other than polar - polar / sqrt(n)",
    "ligand atoms within 2.8 A of a metal",
    "polar ligand atoms with no protein atom within 4 A / sqrt(n)",
    "hydrophobic ligand atoms with no protein atom within 4 A / sqrt(n)",
)

# Atom feature columns of the shard's 22-column rows (pecan.convert.chemistry.atom_features).
ELEMENT = slice(layout.FEATURE_COLUMNS.start, layout.FEATURE_COLUMNS.start + 9)  # B C N O P S Se halogen metal
HYDROPHOBIC, ACCEPTOR, DONOR = 17, 19, 20


def atom_types(atoms: np.ndarray) -> np.ndarray:
    """One of 15 types per row of ``atoms`` (shard rows): 0/1 carbon hydrophobic/polar; 2-5 nitrogen and 6-9
    oxygen as (donor, acceptor) = (1, 1), (1, 0), (0, 1), (0, 0); 10 S/Se, 11 P, 12 halogen, 13 metal, 14 other."""
    bits = atoms[:, ELEMENT]
    element = np.where(bits.max(axis=1) > 0, bits.argmax(axis=1), -1)
    donor, acceptor = atoms[:, DONOR] > 0, atoms[:, ACCEPTOR] > 0
    types = np.full(len(atoms), 14)
    types[element == 1] = np.where(atoms[element == 1, HYDROPHOBIC] > 0, 0, 1)
    flags = 3 - (2 * donor + acceptor)  # (1, 1) -> 0, (1, 0) -> 1, (0, 1) -> 2, (0, 0) -> 3
    types[element == 2] = 2 + flags[element == 2]
    types[element == 3] = 6 + flags[element == 3]
    types[(element == 5) | (element == 6)] = 10
    types[element == 4] = 11
    types[element == 7] = 12
    types[element == 8] = 13
    return types


def pair_counts(atoms: np.ndarray) -> np.ndarray:
    """[15 * 15 * 9] counts of (ligand type, protein type, distance bin) pairs of one pose."""
    ligand, protein = atoms[atoms[:, layout.MOLCODE_COLUMN] > 0], atoms[atoms[:, layout.MOLCODE_COLUMN] < 0]
    distance = np.linalg.norm(ligand[:, None, :3] - protein[None, :, :3], axis=-1)
    bins = np.digitize(distance, BIN_EDGES) - 1
    li, pi = np.nonzero((bins >= 0) & (bins < N_BINS))
    key = (atom_types(ligand)[li] * N_TYPES + atom_types(protein)[pi]) * N_BINS + bins[li, pi]
    return np.bincount(key, minlength=N_TYPES * N_TYPES * N_BINS).astype(np.float32)


def contact_descriptors(atoms: np.ndarray) -> np.ndarray:
    """The 10 ``CONTACTS`` of one pose."""
    ligand, protein = atoms[atoms[:, layout.MOLCODE_COLUMN] > 0], atoms[atoms[:, layout.MOLCODE_COLUMN] < 0]
    distance = np.linalg.norm(ligand[:, None, :3] - protein[None, :, :3], axis=-1)
    n = len(ligand)
    ligand_polar = (ligand[:, ELEMENT][:, 2] > 0) | (ligand[:, ELEMENT][:, 3] > 0)
    protein_polar = (protein[:, ELEMENT][:, 2] > 0) | (protein[:, ELEMENT][:, 3] > 0)
    ligand_hydrophobic, protein_hydrophobic = ligand[:, HYDROPHOBIC] > 0, protein[:, HYDROPHOBIC] > 0
    metal = protein[:, ELEMENT][:, 8] > 0
    near4, near6 = (distance < 4).sum(axis=1), (distance < 6).sum(axis=1)
    polar_pair = ligand_polar[:, None] & protein_polar[None, :]
    bonded = ((distance < 3.5) & polar_pair).any(axis=1)
    root = np.sqrt(n)
    return np.array(
        [
            (near4 > 0).mean(),
            near6.mean() / 10,
            bonded.sum() / root,
            (ligand_polar & ~bonded & (near6 >= 15)).sum() / root,
            ((distance < 4) & ligand_hydrophobic[:, None] & protein_polar[None, :]).sum() / n,
            ((distance < 4.5) & ligand_hydrophobic[:, None] & protein_hydrophobic[None, :]).sum() / n,
            ((distance < 3.0) & ~polar_pair).sum() / root,
            ((distance < 2.8) & metal[None, :]).sum(),
            (ligand_polar & (near4 == 0)).sum() / root,
            (ligand_hydrophobic & (near4 == 0)).sum() / root,
        ],
        dtype=np.float32,
    )


def pose_features(index: pd.DataFrame, shards: Path) -> dict[str, np.ndarray]:
    """Both feature sets of every docked pose of ``index`` (run.py's index: shard paths relative to ``shards``)."""
    pairs, contacts = [], []
    for (shard, complex_id), poses in index.groupby(["shard", "complex_id"], sort=False):
        with h5py.File(shards / shard, "r") as handle:
            group = handle[f"{complex_id}/{POSE_GROUP}"]
            for pose in poses["pose_id"]:
                atoms = group[pose]["data"][()]
                pairs.append(pair_counts(atoms))
                contacts.append(contact_descriptors(atoms))
    return {"pairs": np.log1p(np.stack(pairs)), "contacts": np.stack(contacts)}


def fit_fold(features: np.ndarray, gap: np.ndarray, label: np.ndarray, complexes: np.ndarray, l2: float):
    """theta and w of ``theta . z - w * gap`` (z: features standardised on these poses) minimising the mean
    per-complex softmax loss of the near-native poses + l2 |theta|^2; returns a scorer of new poses."""
    x = torch.as_tensor(features, dtype=torch.float64)
    mean, scale = x.mean(dim=0), x.std(dim=0) + 1e-3
    z = (x - mean) / scale
    gaps = torch.as_tensor(gap, dtype=torch.float64)
    y = torch.as_tensor(label, dtype=torch.float64)
    codes = torch.as_tensor(pd.factorize(complexes)[0])
    groups = int(codes.max()) + 1
    positives = torch.zeros(groups, dtype=torch.float64).index_add(0, codes, y)
    sizes = torch.zeros(groups, dtype=torch.float64).index_add(0, codes, torch.ones_like(y))
    both = (positives > 0) & (positives < sizes)
    theta = torch.zeros(z.shape[1], dtype=torch.float64, requires_grad=True)
    w = torch.ones((), dtype=torch.float64, requires_grad=True)
    optimizer = torch.optim.LBFGS([theta, w], max_iter=300, line_search_fn="strong_wolfe")

    # The loss of pecan.train.ranking.listwise_ranking_loss, summed by complex with index_add over the whole
    # training set at once (its per-batch pose-by-pose mask would be n^2 over thousands of poses).
    def closure():
        optimizer.zero_grad()
        score = z @ theta - w * gaps
        top = torch.full((groups,), -1e30, dtype=torch.float64).scatter_reduce(0, codes, score.detach(), "amax")
        weight = torch.exp(score - top[codes])
        total = torch.zeros(groups, dtype=torch.float64).index_add(0, codes, weight)
        near = torch.zeros(groups, dtype=torch.float64).index_add(0, codes, weight * y)
        loss = (total[both].log() - near[both].log()).mean() + l2 * (theta * theta).sum()
        loss.backward()
        return loss

    optimizer.step(closure)
    theta, w = theta.detach(), w.detach()

    def score(new_features: np.ndarray, new_gap: np.ndarray) -> np.ndarray:
        new = (torch.as_tensor(new_features, dtype=torch.float64) - mean) / scale
        return (new @ theta - w * torch.as_tensor(new_gap, dtype=torch.float64)).numpy()

    return score


def cross_validate(frame: pd.DataFrame, features: np.ndarray, l2: float) -> np.ndarray:
    """Held-out scores of every pose of ``frame`` (columns complex_id, fold, gap, label), one fit per fold."""
    scores = np.zeros(len(frame))
    for fold in sorted(frame["fold"].unique()):
        train, test = (frame["fold"] != fold).to_numpy(), (frame["fold"] == fold).to_numpy()
        scorer = fit_fold(
            features[train], frame["gap"].to_numpy()[train], frame["label"].to_numpy()[train],
            frame["complex_id"].to_numpy()[train], l2,
        )  # fmt: skip
        scores[test] = scorer(features[test], frame["gap"].to_numpy()[test])
    return scores


def versus_docking(frame: pd.DataFrame, column: str, n_boot: int = 5000, seed: int = 0) -> dict:
    """Top-1 of ``column`` (higher is better) and of the docking score, and their paired difference."""
    mine = top_k_hits(frame, column, 1)
    docking = top_k_hits(frame, "docking_score", 1, higher_is_better=False).reindex(mine.index)
    difference = (mine - docking).to_numpy(dtype=float)
    draws = np.random.default_rng(seed).integers(0, len(difference), size=(n_boot, len(difference)))
    return {
        "top1": int(mine.sum()),
        "docking_top1": int(docking.sum()),
        "complexes": len(mine),
        "difference": float(difference.mean()),
        "ci95": bootstrap_interval(difference, draws),
    }


def main(argv=None) -> int:
    """Features, fold-wise fits for every l2, the JSON and a table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docked", type=Path, default=HERE / "docked", help="output directory of pecan redock")
    parser.add_argument("--work", type=Path, default=HERE / "work", help="run.py's work directory (shards)")
    parser.add_argument("--only", type=Path, default=HERE / "c479.csv", help="a CSV with a complex_id column")
    parser.add_argument("--l2", default="0,0.01,0.1,1,10", help="comma-separated weights of |theta|^2")
    parser.add_argument("--out", type=Path, default=None, help="results JSON (default: results/potential_<only>.json)")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    only = set(pd.read_csv(args.only, dtype=str)["complex_id"])
    shards = args.work / "shards"
    index = convert(args.docked, shards, only)
    index = index[index["is_crystal"].astype(int) == 0].reset_index(drop=True)
    manifest = pd.read_csv(args.docked / "manifest.csv", dtype=str).set_index("complex_id")
    index["fold"] = index["complex_id"].map(manifest["fold"])
    index["gap"] = index["docking_score"] - index.groupby("complex_id")["docking_score"].transform("min")
    index["label"] = (index["rmsd"] < 2.0).astype(float)
    features = pose_features(index, shards)
    results = {"only": str(args.only), "complexes": int(index["complex_id"].nunique()), "poses": len(index), "fits": []}
    print("| features | l2 | top-1 | Vina top-1 | difference (pp) [95%] |\n|---|---|---|---|---|")
    for name, values in features.items():
        for l2 in (float(v) for v in args.l2.split(",")):
            frame = index.assign(learned=cross_validate(index, values, l2))
            row = {"features": name, "l2": l2, **versus_docking(frame, "learned")}
            results["fits"].append(row)
            low, high = (100 * v for v in row["ci95"])
            print(
                f"| {name} | {l2:g} | {row['top1']}/{row['complexes']} | {row['docking_top1']} "
                f"| {100 * row['difference']:+.1f} [{low:+.1f}, {high:+.1f}] |",
                flush=True,
            )
    out = args.out or HERE / "results" / f"potential_{args.only.stem}.json"
    out.write_text(json.dumps(results, indent=1) + "\n")
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
