"""A second, independent pose source: the CASF-2013 core set's QuickVina 2 poses, as the converter's input.

    python -m studies.corpus.qvina CORESET_GIT_DIR [--runs qvina_ex8_1,qvina_ex8_2,qvina_ex8_3] [--out DIR]

caiocrocha/pdbbind-coreset-2013 ships, per core-set complex, QuickVina 2 docking runs
(``pdbbind-2019.chemflow/DockFlow/<run>/<pdbid>/out.pdbqt``, 10 modes each, exhaustiveness 8 or 32, three
seeds). This writes, for every core-set complex of the corpus (studies/corpus/manifest.csv, so the reserved
proteins are already out), ``DIR/poses/<pdbid>.sdf``: every mode of the chosen runs, named
``<pdbid>_<run>_pose<k>``, with the crystal ligand's bond orders (RDKit's template assignment onto Open Babel's
reading of the PDBQT) and the mode's score as the SD property ``docking_score``; and ``DIR/manifest.csv`` for
``pecan convert`` / studies/realdock/run.py (receptor and crystal ligand from the corpus inputs).

A model trained on the corpus's own Vina poses and scored on these tests a docking program it never saw.
Those runs started from the crystal ligand's geometry (the source's table says so); QuickVina 2 randomises
position, orientation and torsions before its search, but the ring conformations are the crystal's.
"""

from __future__ import annotations

import argparse
import csv
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

from pecan.convert.chemistry import heavy_graph
from studies.realdock.prepare import git_show, resolve

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]

RUN_DIR = "pdbbind-2019.chemflow/DockFlow"
SCORE = re.compile(r"REMARK VINA RESULT:\s+(-?\d+\.?\d*)")


def models(pdbqt: str) -> list[tuple[str, float]]:
    """(PDBQT block, score) of every MODEL."""
    blocks = re.split(r"^MODEL\s+\d+\s*$", pdbqt, flags=re.M)[1:]
    out = []
    for block in blocks:
        match = SCORE.search(block)
        if match is None:
            raise ValueError("a MODEL without 'REMARK VINA RESULT'")
        out.append((block.split("ENDMDL")[0], float(match.group(1))))
    return out


def skeleton(mol):
    """Elements and connectivity only (the converter's heavy-atom graph, rings perceived): what a PDBQT pose and
    the crystal ligand share whatever bond orders either was given."""
    from rdkit import Chem

    bare = heavy_graph(mol)
    Chem.FastFindRings(bare)
    return bare


def pose_molecule(block: str, template):
    """One mode as the crystal ligand's molecule (its bond orders, charges, hydrogens-free) at the mode's
    heavy-atom coordinates, matched by elements and connectivity; None when they do not match."""
    from rdkit import Chem
    from rdkit.Geometry import Point3D

    with tempfile.TemporaryDirectory() as tmp:
        source = Path(tmp) / "mode.pdbqt"
        source.write_text(block + "ENDMDL\n")
        sdf = Path(tmp) / "mode.sdf"
        subprocess.run(["obabel", str(source), "-O", str(sdf)], check=True, capture_output=True)
        read = Chem.MolFromMolFile(str(sdf), sanitize=False, removeHs=False)
    if read is None:
        return None
    mode = skeleton(read)
    match = mode.GetSubstructMatch(skeleton(template))
    if len(match) != template.GetNumAtoms() or mode.GetNumAtoms() != template.GetNumAtoms():
        return None
    pose = Chem.Mol(template)
    conformer = pose.GetConformer()
    positions = mode.GetConformer().GetPositions()
    for atom_index, mode_index in enumerate(match):
        conformer.SetAtomPosition(atom_index, Point3D(*positions[mode_index]))
    return pose


def convert_complex(git_dir: Path, commit: str, pdbid: str, runs: list[str], template, out: Path) -> tuple[int, int]:
    """Write out/poses/<pdbid>.sdf; returns (poses written, modes dropped)."""
    from rdkit import Chem

    written, dropped = [], 0
    for run in runs:
        try:
            text = git_show(git_dir, commit, f"{RUN_DIR}/{run}/{pdbid}/out.pdbqt")
        except subprocess.CalledProcessError:
            continue
        for k, (block, score) in enumerate(models(text), start=1):
            mol = pose_molecule(block, template)
            if mol is None:
                dropped += 1
                continue
            mol.SetProp("_Name", f"{pdbid}_{run}_pose{k}")
            mol.SetProp("docking_score", f"{score:.3f}")
            written.append(mol)
    if written:
        (out / "poses").mkdir(parents=True, exist_ok=True)
        writer = Chem.SDWriter(str(out / "poses" / f"{pdbid}.sdf"))
        for mol in written:
            writer.write(mol)
        writer.close()
    return len(written), dropped


def main(argv=None) -> int:
    """Every core-set complex of the corpus."""
    from rdkit import Chem, RDLogger

    RDLogger.DisableLog("rdApp.warning")  # symmetric ligands: "more than one matching pattern", once per mode
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("coreset_git_dir", type=Path, help="clone of caiocrocha/pdbbind-coreset-2013")
    parser.add_argument("--runs", default="qvina_ex8_1,qvina_ex8_2,qvina_ex8_3", help="comma-separated runs")
    parser.add_argument("--out", type=Path, default=HERE / "qvina", help="output directory")
    args = parser.parse_args(argv)
    commit = resolve(args.coreset_git_dir)
    runs = [r for r in args.runs.split(",") if r]
    with open(HERE / "manifest.csv") as handle:
        corpus = [row for row in csv.DictReader(handle) if row["source"] == "coreset2013"]
    out = args.out.resolve()
    rows, dropped_total = [], 0
    for k, row in enumerate(corpus, start=1):
        pdbid = row["complex_id"]
        template = Chem.RemoveHs(Chem.MolFromMolFile(str(HERE / row["crystal_ligand"])))
        written, dropped = convert_complex(args.coreset_git_dir, commit, pdbid, runs, template, out)
        dropped_total += dropped
        if written:
            rows.append(
                {
                    "complex_id": pdbid,
                    "receptor": os.path.relpath(HERE / row["receptor"], out),
                    "poses": f"poses/{pdbid}.sdf",
                    "crystal_ligand": os.path.relpath(HERE / row["crystal_ligand"], out),
                    "score_property": "docking_score",
                    "family": row["family"],
                    "fold": row["fold"],
                    "source": "quickvina2",
                }
            )
        if k % 25 == 0:
            print(f"{k}/{len(corpus)} complexes", flush=True)
    with open(out / "manifest.csv", "w", newline="") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    (out / "SOURCE.txt").write_text(f"caiocrocha/pdbbind-coreset-2013 {commit} {RUN_DIR}/{{{','.join(runs)}}}\n")
    print(
        f"{len(rows)} complexes with poses; {dropped_total} modes dropped (no bond-order match to the crystal ligand)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
