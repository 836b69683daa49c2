"""A manifest over the real protein-ligand files that ship inside the ProLIF package.

- ``vina``: ``prolif/data/vina/rec.pdb`` (receptor with hydrogens), ``lig.pdb`` (the reference ligand) and
  ``vina_output.sdf`` (9 AutoDock Vina poses); each pose's score comes from the ``REMARK VINA RESULT`` line
  of the matching ``vina_output_ligand_<k>.pdbqt`` and is stored as the SD property ``vina_score``.
- ``1s2g``: ``prolif/data/implicitHbond/receptor.pdb``, ``1.D.sdf`` (ligand without hydrogens) as the
  crystal and ``1.D_protonated.sdf`` (the same ligand protonated) as its one pose.
"""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd


def prolif_data() -> Path:
    """The directory of ProLIF's bundled example files."""
    try:
        import prolif
    except ImportError as err:
        raise ImportError("the example needs ProLIF: pip install -e '.[convert]'") from err
    return Path(prolif.__file__).parent / "data"


def vina_poses_with_scores(out: Path) -> Path:
    """Copy of vina_output.sdf whose records carry the Vina score (SD property ``vina_score``)."""
    from rdkit import Chem

    data = prolif_data() / "vina"
    mols = list(Chem.SDMolSupplier(str(data / "vina_output.sdf"), removeHs=False))
    writer = Chem.SDWriter(str(out))
    for k, mol in enumerate(mols, start=1):
        remark = re.search(r"VINA RESULT:\s+(\S+)", (data / f"vina_output_ligand_{k}.pdbqt").read_text())
        mol.SetProp("vina_score", remark.group(1))
        writer.write(mol)
    writer.close()
    return out


def write_prolif_manifest(out_dir: Path) -> Path:
    """Write ``manifest.csv`` (and the scored pose SDF) for the two ProLIF example complexes into ``out_dir``."""
    out_dir.mkdir(parents=True, exist_ok=True)
    data = prolif_data()
    rows = [
        {
            "complex_id": "vina",
            "receptor": data / "vina/rec.pdb",
            "crystal_ligand": data / "vina/lig.pdb",
            "poses": vina_poses_with_scores(out_dir / "vina_scored.sdf").name,
            "score_property": "vina_score",
        },
        {
            "complex_id": "1s2g",
            "receptor": data / "implicitHbond/receptor.pdb",
            "crystal_ligand": data / "implicitHbond/1.D.sdf",
            "poses": data / "implicitHbond/1.D_protonated.sdf",
            "score_property": "",
        },
    ]
    path = out_dir / "manifest.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


if __name__ == "__main__":
    import sys

    print(write_prolif_manifest(Path(sys.argv[1] if len(sys.argv) > 1 else "runs/prolif_example")))
