"""Vina's own output as poses: a PDBQT of ``MODEL`` blocks, each with its ``REMARK VINA RESULT`` line.

A pose's docking score is the first number of its ``REMARK VINA RESULT:`` line (Vina's energy, kcal/mol,
lower = better), set as the property the model reads. PDBQT keeps no bond orders and only polar hydrogens, so
the molecule is rebuilt from the ``REMARK SMILES`` lines Meeko writes into a ligand's PDBQT and Vina copies
into its output (Meeko's ``RDKitMolCreate``: the `dock` extra). A PDBQT without them (a ligand prepared by
AutoDockTools) cannot be rebuilt without guessing its chemistry: it is refused (exit 2) with what to do.
Every pose is titled by the file's stem, so its poses are one ligand and are named ``<ligand>_pose<k>``.
"""

from __future__ import annotations

import re
from pathlib import Path

from pecan.runtime.errors import ConfigError, ConversionError
from pecan.runtime.numbers import read_number

VINA_RESULT = re.compile(r"^REMARK VINA RESULT:\s*(\S+)", re.MULTILINE)


def check_readable(path: Path) -> None:
    """ConfigError when ``path`` cannot be read as poses: no Meeko SMILES remarks, or Meeko not installed."""
    text = path.read_text(errors="replace")
    if "REMARK SMILES" not in text:
        raise ConfigError(
            f"pecan score: --poses {path} has no 'REMARK SMILES' lines (Meeko writes them into the ligand's "
            f"PDBQT and Vina copies them into its output): without them the ligand's bond orders are unknown; "
            f"prepare the ligand with Meeko (mk_prepare_ligand.py) and dock again, or convert the poses to SDF "
            f"with a tool that knows the ligand's chemistry"
        )
    try:
        import meeko  # noqa: F401
    except ImportError as err:
        raise ConfigError(f"pecan score: PDBQT poses need Meeko (the dock extra: pip install -e '.[dock]'): {err}")


def vina_scores(text: str, where: str = "PDBQT") -> list[float]:
    """The first number of each ``REMARK VINA RESULT`` line, in order, read as every docking score is
    (``pecan.runtime.numbers``: a ``nan`` or a word is NotANumber naming ``where`` and the pose)."""
    return [
        read_number(value, f"{where}: REMARK VINA RESULT of pose {k}")
        for k, value in enumerate(VINA_RESULT.findall(text), 1)
    ]


def read_pdbqt_poses(path: Path, score_property: str) -> list:
    """One RDKit molecule per pose of ``path`` (all hydrogens), titled by the file's stem, its Vina score as
    ``score_property``; ConversionError naming the file when Meeko cannot rebuild them."""
    from meeko import PDBQTMolecule, RDKitMolCreate
    from rdkit import Chem

    try:
        text = path.read_text()
    except (OSError, UnicodeDecodeError) as err:
        raise ConversionError(f"{path}: cannot be read: {err}") from err
    scores = vina_scores(text, str(path))
    try:
        rebuilt = RDKitMolCreate.from_pdbqt_mol(PDBQTMolecule(text, skip_typing=True))
    except Exception as err:  # Meeko's own parse errors are of many types
        raise ConversionError(f"{path}: Meeko cannot read it as PDBQT poses: {err}") from err
    if not rebuilt or rebuilt[0] is None:
        raise ConversionError(f"{path}: Meeko cannot rebuild a molecule from its REMARK SMILES lines")
    conformers = list(rebuilt[0].GetConformers())
    if len(scores) != len(conformers):
        raise ConversionError(f"{path}: {len(conformers)} poses but {len(scores)} REMARK VINA RESULT lines")
    poses = []
    for conformer, score in zip(conformers, scores):
        mol = Chem.Mol(rebuilt[0])
        mol.RemoveAllConformers()
        mol.AddConformer(Chem.Conformer(conformer), assignId=True)
        mol.SetProp("_Name", path.stem)
        mol.SetProp(score_property, repr(score))
        poses.append(mol)
    return poses
