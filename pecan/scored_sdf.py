"""Scored poses back as SDF: each complex's input records, sorted by PECAN score, with the SD properties
``pecan_score`` and ``pecan_rank`` (and ``rmsd``/``label`` when the complex had a crystal ligand). Needs RDKit
(the `convert` extra); only `pecan score` imports it."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from pecan.fileio import atomic_path


def _scored_records(row, scores: pd.DataFrame) -> list:
    """(rank, mol) of one manifest row's poses that were scored, with their SD properties set."""
    from pecan.convert import chemistry as chem
    from pecan.convert.complexes import pose_ids

    mols = chem.read_ligands(Path(row.poses))
    by_pose = scores[scores["complex"] == row.complex_id].set_index("pose")
    records = []
    for pose_id, mol in zip(pose_ids(row.complex_id, mols), mols):
        if mol is None or pose_id not in by_pose.index:
            continue  # not converted: listed in the warnings of the conversion
        scored = by_pose.loc[pose_id]
        mol.SetProp("pecan_complex", str(row.complex_id))
        mol.SetProp("pecan_pose", str(pose_id))
        mol.SetDoubleProp("pecan_score", float(scored["score"]))
        mol.SetIntProp("pecan_rank", int(scored["rank"]))
        if not math.isnan(float(scored["rmsd"])):
            mol.SetDoubleProp("rmsd", float(scored["rmsd"]))
            mol.SetIntProp("label", int(scored["label"]))
        records.append((int(scored["rank"]), mol))
    return sorted(records, key=lambda item: item[0])


def write_scored_sdf(rows: pd.DataFrame, scores: pd.DataFrame, out: Path) -> int:
    """Write every scored pose of ``rows`` (manifest order, then rank) to ``out`` atomically; returns the count."""
    from rdkit import Chem

    written = 0
    with atomic_path(out) as tmp:
        writer = Chem.SDWriter(str(tmp))
        try:
            for row in rows.itertuples():
                for _, mol in _scored_records(row, scores):
                    writer.write(mol)
                    written += 1
        finally:
            writer.close()
    return written
