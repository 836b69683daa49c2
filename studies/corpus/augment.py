"""Extra training poses for the corpus: the crystal pose's neighbourhood, perturbed and minimised by Vina.

    python -m studies.corpus.augment [--docked studies/corpus/docked] [--out studies/corpus/augmented]
                                        [--poses 30] [--seed 0] [--limit N]

Vina's own poses give each complex about 17 poses, one or two of them near-native, and they are where Vina's
score already points: a rescorer trained on them sees few pairs of a near-native pose and a close miss. For
every docked complex this script writes ``--poses`` more, each a local minimum of Vina's score, in three
bands of distance from the crystal pose:

1. the start conformer of the complex's docking run (the same ETKDG conformer, so the same ring shapes and
   bond lengths as the docked poses: the model cannot tell an extra pose by its internal geometry), its
   rotatable torsions set to the crystal's and fitted onto the crystal pose;
2. that pose moved: a random translation, a rotation about its centre and random torsion changes, at a
   small, a medium or a large scale (the large one anywhere in the docking box, any orientation);
3. Vina's local optimisation (``Vina.optimize``) of the moved pose in the complex's own box and receptor.

The output is laid out as ``pecan redock`` lays out its own (``poses/<complex>.sdf`` with the
``docking_score`` property, ``manifest.csv`` in the converter's columns, the docked manifest's family and fold),
so the benchmark converts it as it converts docked poses (``studies/realdock/run.py --train-extra``).
Resumable: a complex whose poses file exists is skipped. Training data only: these poses know the crystal
pose, so they are never a test set.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from pecan.redock import prepare
from pecan.redock.dock import pose_molecules, write_poses
from pecan.runtime.errors import RedockError

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]

# (share of the poses, translation sd (A), rotation sd (degrees), torsion change sd (degrees)); None: anywhere.
SCALES = ((0.4, 0.7, 15.0, 20.0), (0.3, 2.0, 45.0, 60.0), (0.3, None, None, None))
BOX_PADDING = 4.0  # what the corpus was docked with (pecan redock's default)
ENERGY_RANGE = 10.0  # kcal/mol above the best docked pose, as pecan redock keeps (its default)


def parse_args(argv=None) -> argparse.Namespace:
    """Command-line options."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docked", type=Path, default=HERE / "docked", help="pecan redock's output directory")
    parser.add_argument("--out", type=Path, default=HERE / "augmented", help="where the extra poses go")
    parser.add_argument("--poses", type=int, default=30, help="extra poses per complex")
    parser.add_argument("--seed", type=int, default=0, help="random seed (each complex's derives from it)")
    parser.add_argument("--limit", type=int, default=0, help="only the first N complexes (0: all)")
    parser.add_argument("--only", default="", help="comma-separated complex ids")
    return parser.parse_args(argv)


def rotatable_torsions(mol) -> list[tuple[int, int, int, int]]:
    """One heavy-atom dihedral (i, j, k, l) per rotatable bond j-k (RDKit's strict definition)."""
    from rdkit.Chem.Lipinski import RotatableBondSmarts

    torsions = []
    for j, k in mol.GetSubstructMatches(RotatableBondSmarts):
        a, b = mol.GetAtomWithIdx(j), mol.GetAtomWithIdx(k)
        left = [n.GetIdx() for n in a.GetNeighbors() if n.GetIdx() != k and n.GetAtomicNum() > 1]
        right = [n.GetIdx() for n in b.GetNeighbors() if n.GetIdx() != j and n.GetAtomicNum() > 1]
        if left and right and not mol.GetBondBetweenAtoms(j, k).IsInRing():
            torsions.append((left[0], j, k, right[0]))
    return torsions


def crystal_like(start, crystal, torsions):
    """The start conformer with the crystal's torsions, fitted onto the crystal pose (heavy atoms)."""
    from rdkit import Chem
    from rdkit.Chem import rdMolAlign, rdMolTransforms

    mol = Chem.Mol(start)
    conf, ref = mol.GetConformer(), crystal.GetConformer()
    for torsion in torsions:
        rdMolTransforms.SetDihedralDeg(conf, *torsion, rdMolTransforms.GetDihedralDeg(ref, *torsion))
    heavy = [(a.GetIdx(), a.GetIdx()) for a in crystal.GetAtoms()]
    rdMolAlign.AlignMol(mol, crystal, atomMap=heavy)
    return mol


def rotation(rng, sd_degrees) -> np.ndarray:
    """A rotation matrix: about a random axis by a normal angle (sd in degrees), or uniform when sd is None."""
    if sd_degrees is None:
        q = rng.normal(size=4)
        w, x, y, z = q / np.linalg.norm(q)
    else:
        axis = rng.normal(size=3)
        axis /= np.linalg.norm(axis)
        half = np.deg2rad(rng.normal(0.0, sd_degrees)) / 2
        w, (x, y, z) = np.cos(half), np.sin(half) * axis
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - z * w), 2 * (x * z + y * w)],
            [2 * (x * y + z * w), 1 - 2 * (x * x + z * z), 2 * (y * z - x * w)],
            [2 * (x * z - y * w), 2 * (y * z + x * w), 1 - 2 * (x * x + y * y)],
        ]
    )


def moved(mol, torsions, rng, scale, box: prepare.Box):
    """A copy of ``mol`` with changed torsions, rotated about its centre and translated (one SCALES row), or
    None when it does not fit in the box."""
    from rdkit import Chem
    from rdkit.Chem import rdMolTransforms

    _, shift, turn, twist = scale
    out = Chem.Mol(mol)
    conf = out.GetConformer()
    for torsion in torsions:
        change = rng.uniform(-180, 180) if twist is None else rng.normal(0.0, twist)
        rdMolTransforms.SetDihedralDeg(conf, *torsion, rdMolTransforms.GetDihedralDeg(conf, *torsion) + change)
    xyz = conf.GetPositions()
    centre = xyz.mean(0)
    if shift is None:  # anywhere in the inner half of the box
        target = np.asarray(box.center) + rng.uniform(-0.25, 0.25, 3) * np.asarray(box.size)
    else:
        target = centre + rng.normal(0.0, shift, 3)
    xyz = (xyz - centre) @ rotation(rng, turn).T + target
    xyz = inside(xyz, box)
    if xyz is None:
        return None
    for index, point in enumerate(xyz):
        conf.SetAtomPosition(index, point.tolist())
    return out


def inside(xyz: np.ndarray, box: prepare.Box, margin: float = 0.3) -> np.ndarray | None:
    """``xyz`` shifted by the least that puts every atom inside the box (Vina refuses a ligand outside its
    grid), or None when it cannot fit in this orientation."""
    low = np.asarray(box.center) - np.asarray(box.size) / 2 + margin
    high = np.asarray(box.center) + np.asarray(box.size) / 2 - margin
    if (np.ptp(xyz, axis=0) > high - low).any():
        return None
    return xyz + np.maximum(low - xyz.min(0), 0) - np.maximum(xyz.max(0) - high, 0)


def minimised(engine, mol, workdir: Path) -> tuple[str, float]:
    """Vina's local optimisation of one pose: its PDBQT text and score (kcal/mol, as the docked poses')."""
    engine.set_ligand_from_string(prepare.ligand_pdbqt(mol))
    energies = engine.optimize()
    out = workdir / "pose.pdbqt"
    engine.write_pose(str(out), overwrite=True)
    return out.read_text(), float(energies[0])


def augment_one(row: dict, record: dict, args: argparse.Namespace, receptors: Path) -> int:
    """Write one complex's extra poses (those within the docking run's energy range); returns how many."""
    from vina import Vina

    docked = args.docked
    crystal = prepare.read_crystal((docked / row["crystal_ligand"]).resolve())
    box = prepare.box_around(prepare.heavy_xyz(crystal), BOX_PADDING)
    start = prepare.start_conformer(crystal, int(record["seed"]))  # the docking run's own start conformer
    torsions = rotatable_torsions(crystal)
    native = crystal_like(start, crystal, torsions)
    receptor = prepare.receptor_pdbqt((docked / row["receptor"]).resolve(), receptors / f"{row['complex_id']}.pdbqt")
    rng = np.random.default_rng([args.seed, int(record["seed"])])
    engine = Vina(sf_name="vina", cpu=1, seed=int(record["seed"]), verbosity=0)
    engine.set_receptor(str(receptor))
    engine.set_ligand_from_string(prepare.ligand_pdbqt(native))
    engine.compute_vina_maps(center=list(box.center), box_size=list(box.size))
    shares = np.array([s[0] for s in SCALES])
    texts, scores = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for k in range(args.poses):
            scale = SCALES[0] if k == 0 else SCALES[rng.choice(len(SCALES), p=shares / shares.sum())]
            pose = None if k else native
            for _ in range(50):  # a draw that does not fit in the box is drawn again
                pose = pose or moved(native, torsions, rng, scale, box)
            if pose is None:
                raise RedockError("no moved pose fits in the docking box in 50 draws")
            text, score = minimised(engine, pose, Path(tmp))
            texts.append(text)
            scores.append(score)
    # What a docking run would have returned: no clash left by the local optimisation (score above 0), nothing
    # past the docked poses' energy range above their best.
    worst = min(0.0, float(record.get("best_docking_score", record.get("best_score"))) + ENERGY_RANGE)
    mols = []
    for text, score in zip(texts, scores):
        if score <= worst:
            name = f"{row['complex_id']}_aug{len(mols) + 1}"
            (mol,) = pose_molecules(text, np.array([score]), name)
            mol.SetProp("_Name", name)
            mols.append(mol)
    write_poses(args.out / "poses" / f"{row['complex_id']}.sdf", mols)
    return len(mols)


def write_manifest(manifest: pd.DataFrame, args: argparse.Namespace) -> Path:
    """The converter's manifest of the complexes with extra poses so far (written atomically)."""
    from pecan.runtime.fileio import write_csv

    written = manifest[[(args.out / "poses" / f"{c}.sdf").exists() for c in manifest["complex_id"]]].copy()
    for column in ("receptor", "crystal_ligand"):  # relative to the output directory, as the converter reads them
        written[column] = [os.path.relpath((args.docked / p).resolve(), args.out.resolve()) for p in written[column]]
    out = args.out / "manifest.csv"
    write_csv(written, out)
    return out


def main(argv=None) -> int:
    """Every docked complex's extra poses, then the manifest of those written so far."""
    args = parse_args(argv)
    manifest = pd.read_csv(args.docked / "manifest.csv", dtype=str, keep_default_na=False)
    if args.only:
        manifest = manifest[manifest["complex_id"].isin(args.only.split(","))]
    if args.limit:
        manifest = manifest.head(args.limit)
    receptors = args.out / "receptors"
    receptors.mkdir(parents=True, exist_ok=True)
    began, done = time.perf_counter(), 0
    for n, row in enumerate(manifest.to_dict("records"), start=1):
        target = args.out / "poses" / f"{row['complex_id']}.sdf"
        if target.exists():
            continue
        record = json.loads((args.docked / "records" / f"{row['complex_id']}.json").read_text())
        try:
            count = augment_one(row, record, args, receptors)
        except (RedockError, RuntimeError, ValueError) as err:
            print(f"{row['complex_id']}: skipped ({type(err).__name__}: {err})", flush=True)
            continue
        write_manifest(manifest, args)  # after every complex: a long run's finished part can be converted already
        done += 1
        rate = (time.perf_counter() - began) / done
        print(f"[{n}/{len(manifest)}] {row['complex_id']}: {count} poses ({rate:.1f} s a complex)", flush=True)
    out = write_manifest(manifest, args)
    print(f"{len(pd.read_csv(out))} complexes with extra poses; wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
