"""Scored poses back as SDF: each complex's input records, sorted by PECAN score, with the SD properties
``pecan_score`` and ``pecan_rank`` (and ``rmsd``/``label`` when the complex had a crystal ligand). Needs RDKit
(the `convert` extra); only `pecan score` imports it.

Scores are joined to records by record number: the converter names each record of a poses file
(``pecan.convert.complexes.pose_ids``), and the same names computed again here map every scored pose to the
record it came from. Ids are text end to end (a pose ``007``, ``1e10`` or ``NA`` stays that string)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Optional

import pandas as pd

from pecan.runtime.errors import DataError
from pecan.runtime.fileio import atomic_path


def _scored_records(row, scores: pd.DataFrame, mols: Optional[list] = None) -> list:
    """(rank, mol) of one manifest row's scored poses, with their SD properties set; a scored pose whose
    record cannot be found is a DataError (it would silently vanish from the SDF). ``mols``: the poses file's
    records already parsed (else it is read again)."""
    from pecan.convert import chemistry as chem
    from pecan.convert.complexes import pose_ids

    if mols is None:
        mols = chem.read_ligands(Path(row.poses))
    record_of = {pose_id: k for k, pose_id in enumerate(pose_ids(row.complex_id, mols))}
    records = []
    for scored in scores[scores["complex_id"] == row.complex_id].itertuples():
        k = record_of.get(scored.pose_id)
        if k is None or mols[k] is None:
            raise DataError(f"complex {row.complex_id}: scored pose {scored.pose_id!r} is not a record of {row.poses}")
        mol = mols[k]
        mol.SetProp("pecan_complex", str(row.complex_id))
        mol.SetProp("pecan_pose", str(scored.pose_id))
        mol.SetDoubleProp("pecan_score", float(scored.pecan_score))
        mol.SetIntProp("pecan_rank", int(scored.pecan_rank))
        if not math.isnan(float(scored.rmsd)):
            mol.SetDoubleProp("rmsd", float(scored.rmsd))
            mol.SetIntProp("label", int(scored.label))
        records.append((int(scored.pecan_rank), mol))
    return sorted(records, key=lambda item: item[0])


def write_scored_sdf(rows: pd.DataFrame, scores: pd.DataFrame, out: Path, records: Optional[list] = None) -> int:
    """Write every scored pose of ``rows`` (manifest order, then rank) to ``out`` atomically; returns the count.
    Every row of ``scores`` is written exactly once, or a DataError says which is missing. ``records``: each
    row's parsed poses (a list per row, in order), joined to the scores by record number."""
    from rdkit import Chem

    written = 0
    with atomic_path(out) as tmp:
        writer = Chem.SDWriter(str(tmp))
        try:
            for k, row in enumerate(rows.itertuples()):
                for _, mol in _scored_records(row, scores, records[k] if records is not None else None):
                    writer.write(mol)
                    written += 1
        finally:
            writer.close()
        if written != len(scores):
            raise DataError(f"{out}: {len(scores)} poses were scored but {written} matched a manifest record")
    return written
