"""Deterministic synthetic protein-ligand pose data in the PECAN HDF5 shard layout.

Each complex is a crystal ligand (a branched chain with some six-membered rings, ~1.5 A bonds)
with a pocket built around it: complementary partner atoms at 3.0-4.3 A from the ligand atoms
(acceptor faces donor, hydrophobic faces hydrophobic, charge faces opposite charge), then a bulk of
protein atoms at protein-like density (1 heavy atom per ~22 A^3, at least 1.4 A apart) that ends
where the requested atom count is used up (8-14 A from the ligand). A cone on one side is left empty
as the solvent opening. Docked poses are the crystal ligand with tail torsions, a rigid rotation and
a translation chosen to hit a target RMSD (about a third below 2 A, the rest up to 10 A); of a few
candidate translations the least clashing is kept, as a docking search would. Near-native poses keep
the pocket contacts while far decoys clash with the protein or leave through the opening.

Interaction counts are ligand-protein atom pairs within a cutoff: H-bonds (donor-acceptor, 3.5 A),
hydrophobic (4.5 A), halogen bonds (halogen-acceptor, 3.5 A), salt bridges (opposite formal charge,
4.0 A) and pi contacts (aromatic-aromatic, 5.5 A).

Every complex draws from its own generator seeded by (seed, global complex index), so any shard can
be produced without the ones before it and the same arguments give byte-identical arrays.

Layout: ``chemistry`` (atom roles and tables), ``molecules`` (ligand and pocket builders),
``complexes`` (poses, interactions, scores), ``writer`` (shards and index), ``cache`` (reuse).
Nothing on the training path imports this package.
"""

from pecan.synthetic.cache import dataset_is_current, ensure_dataset
from pecan.synthetic.chemistry import (
    CRYSTAL_GROUP,
    DOCKING_GROUP,
    INDEX_COLUMNS,
    INTERACTION_NAMES,
    MOLCODE_COLUMN,
    SyntheticComplex,
)
from pecan.synthetic.complexes import complex_id_for, generate_complex
from pecan.synthetic.writer import generate_dataset

__all__ = [
    "CRYSTAL_GROUP",
    "DOCKING_GROUP",
    "INDEX_COLUMNS",
    "INTERACTION_NAMES",
    "MOLCODE_COLUMN",
    "SyntheticComplex",
    "dataset_is_current",
    "ensure_dataset",
    "generate_complex",
    "generate_dataset",
    "complex_id_for",
]
