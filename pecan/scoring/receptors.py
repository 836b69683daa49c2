"""Receptors as the model was trained on them: with hydrogens.

Most PDB files as downloaded have no hydrogens, while the shipped model's training receptors all had them
(`studies/corpus`: Open Babel's ``obabel -h`` added them where the source had none). Hydrogens change what
the model sees (the atoms' hybridisation and donor features, the interaction counts): without them, the shipped
model's scores of ProLIF's Vina poses fall by up to 0.04. So `pecan score` checks each receptor once: one with
hydrogens on fewer than ``MIN_HYDROGEN_FRACTION`` of its atoms (a protonated protein has about half: 51% in
ProLIF's Vina receptor) is without hydrogens, and

- ``--receptor-hydrogens add`` (the default): Open Babel adds them as training did (``obabel R -h``, its atom
  records kept), in a temporary folder removed at once, and one line notes it; where ``obabel`` is not
  installed a warning says the receptor is scored as given and how to protonate it;
- ``--receptor-hydrogens keep``: the receptor is scored as given, with the same warning (use it for a model
  trained on receptors converted as given, e.g. by `pecan convert` from files without hydrogens).
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Callable

from pecan.convert.chemistry import ConversionError
from pecan.scoring.featurise import PreparedReceptor

log = logging.getLogger("pecan")

RECEPTOR_HYDROGENS = ("add", "keep")
MIN_HYDROGEN_FRACTION = 0.05
"""A receptor with hydrogens on fewer of its atoms than this is taken to have none."""


def hydrogen_fraction(mol) -> float:
    """The share of a molecule's atoms that are hydrogens."""
    atoms = mol.GetNumAtoms()
    return sum(atom.GetAtomicNum() == 1 for atom in mol.GetAtoms()) / atoms if atoms else 0.0


def receptor_reader(hydrogens: str) -> Callable[[Path, bool], PreparedReceptor]:
    """``GroupConverter``'s receptor reader for ``--receptor-hydrogens`` (``add`` or ``keep``)."""
    return functools.partial(read_receptor, hydrogens=hydrogens)


def read_receptor(path: Path, drop_hetero: bool, hydrogens: str) -> PreparedReceptor:
    """The receptor of ``path`` prepared for scoring: with hydrogens added by Open Babel when it has none and
    ``hydrogens`` is 'add' (and obabel is installed); else as given, with a warning when it has none."""
    receptor = PreparedReceptor.read(path, drop_hetero)
    fraction = hydrogen_fraction(receptor.mol)
    if fraction >= MIN_HYDROGEN_FRACTION:
        return receptor
    found = f"receptor {path} has no hydrogens ({fraction:.0%} of its atoms)"
    advice = f"protonate it as the shipped model's receptors were (obabel {path} -h -O protonated.pdb)"
    if hydrogens == "keep":
        log.warning(
            "%s: scored as given (--receptor-hydrogens keep); a model trained on receptors with hydrogens "
            "scores it differently: %s",
            found,
            advice,
        )
        return receptor
    if shutil.which("obabel") is None:
        log.warning(
            "%s and Open Babel's obabel is not installed to add them: scored as given, which changes the scores "
            "of a model trained on receptors with hydrogens; install Open Babel (apt-get install openbabel) or %s",
            found,
            advice,
        )
        return receptor
    try:
        protonated = with_open_babel_hydrogens(path, drop_hetero)
    except ConversionError as err:
        log.warning("%s and Open Babel could not add them (%s): scored as given; %s", found, err, advice)
        return receptor
    added = protonated.mol.GetNumAtoms() - receptor.mol.GetNumAtoms()
    log.info(
        "%s: added %d hydrogens with Open Babel (obabel -h), as the shipped model's training receptors "
        "were prepared (--receptor-hydrogens keep scores it as given)",
        found,
        added,
    )
    return dataclasses.replace(protonated, path=path)


def with_open_babel_hydrogens(path: Path, drop_hetero: bool) -> PreparedReceptor:
    """``path`` protonated by ``obabel -h`` (its ATOM and HETATM records), read as the converter reads a
    receptor; ConversionError naming the receptor when Open Babel fails."""
    with tempfile.TemporaryDirectory(prefix="pecan-receptor-") as folder:
        written = Path(folder) / "protonated.pdb"
        done = subprocess.run(
            ["obabel", "-ipdb", str(path), "-h", "-opdb", "-O", str(written)],
            check=False,
            capture_output=True,
            text=True,
        )
        if done.returncode != 0 or not written.exists():
            raise ConversionError(f"receptor {path}: obabel -h failed: {done.stderr.strip()[-300:]}")
        atoms = [line for line in written.read_text().splitlines() if line.startswith(("ATOM", "HETATM"))]
        written.write_text("\n".join(atoms) + "\nEND\n")
        return PreparedReceptor.read(written, drop_hetero)
