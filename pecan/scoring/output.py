"""`pecan score`'s outputs, written as each ligand group is scored (a screen's SDF is never held whole):

- ``X.sdf``: every scored pose's input record, each ligand's poses sorted by rank (PECAN score, best first; the
  consensus with the docking score under ``--docking-weight``), with the SD properties ``pecan_complex``,
  ``pecan_pose``, ``pecan_score``, ``pecan_rank`` (``pecan_consensus`` under ``--docking-weight``; ``rmsd``/``label``
  when a crystal ligand was given) added before its ``$$$$`` line: an SDF record's own text, kept as it was
  read (``pecan.scoring.sdf_text``), a mol2 or PDB record as RDKit writes it;
- ``X.csv``: scores.csv (``pecan.scoring.scores_csv.SCREEN_COLUMNS``, and ``pecan_consensus`` under
  ``--docking-weight``), ligands in input order, each by rank;
- ``X.failures.csv``: ``complex_id, pose_id, source, reason`` of every pose (or whole ligand, ``pose_id``
  empty) that could not be scored; header only when none failed;
- ``X.metrics.json``: the figures (``pecan.scoring.figures``), at the end.

Each file is written under a temporary name beside its destination and, when the run succeeds, all are
renamed onto their destinations together (``pecan.runtime.fileio.commit_together``): a failed or interrupted
run, or one whose last rename fails, leaves no partial output and every earlier output in place. A write that
fails (a full disk, a quota) is one StorageError naming the output and the reason (exit 1), and every temporary
file is removed: closing the others after it, which may fail the same way, adds no second error.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from pecan.runtime.errors import StorageError
from pecan.runtime.fileio import commit_together, discard_temps, json_text, named_write_errors, temp_beside
from pecan.scoring.consensus import COLUMN as CONSENSUS
from pecan.scoring.scores_csv import SCREEN_COLUMNS
from pecan.scoring.sdf_text import rdkit_record, with_properties

FAILURE_COLUMNS = ("complex_id", "pose_id", "source", "reason")


def output_paths(out: Path) -> dict[str, Path]:
    """What `pecan score --out X.sdf` writes: the SDF, X.csv, X.failures.csv and X.metrics.json."""
    scores_csv = out.with_suffix(".csv")
    return {
        "--out": out,
        "the scores CSV": scores_csv,
        "the failures CSV": out.with_name(out.stem + ".failures.csv"),
        "the metrics JSON": scores_csv.with_name(scores_csv.stem + ".metrics.json"),
    }


class ScoredOutput:
    """The four outputs of one run, open for streaming; ``commit`` renames them into place together. A ``part`` (one
    rank's share under a launcher, ``merge_parts``) also logs each group's number, row count and SDF bytes,
    and its failure rows start with the group's number."""

    def __init__(self, out: Path, part: bool = False) -> None:
        self.part = part
        self.paths = output_paths(Path(out))
        if part:
            self.paths["the groups log"] = Path(out).with_suffix(".groups")
        self._temps: dict[str, Path] = {}
        for what, path in self.paths.items():
            try:
                self._temps[what] = temp_beside(path)
            except BaseException:
                discard_temps(list(self._temps.values()))
                raise
        self._sdf = open(self._temps["--out"], "wb")
        self._csv = open(self._temps["the scores CSV"], "w", newline="")
        self._failures_file = open(self._temps["the failures CSV"], "w", newline="")
        self._failures = csv.writer(self._failures_file)
        self._failures.writerow((["seq"] if part else []) + list(FAILURE_COLUMNS))
        self._groups = open(self._temps["the groups log"], "w") if part else None
        self._header = True
        self._pending: list[pd.DataFrame] = []
        self.written = 0
        self.failed_poses = 0
        self.failed_ligands = 0
        self._itemised: set[str] = set()  # ligands with a failure row per pose
        self.first_failure = ""

    def write_groups(self, scores: pd.DataFrame, groups: list[tuple]) -> None:
        """Consecutive ligands' rows (``scores``: scores.csv's columns, each ligand in rank order) and records:
        ``groups`` holds per ligand its number, its molecules and SDF texts in the rows' order (texts None: RDKit
        renders each molecule) and whether its poses are labelled."""
        with named_write_errors(self.paths["--out"]):
            self._write_groups(scores, groups)

    def _write_groups(self, scores: pd.DataFrame, groups: list[tuple]) -> None:
        consensus = scores[CONSENSUS].tolist() if CONSENSUS in scores else None  # --docking-weight > 0
        self._pending.append(scores[[*SCREEN_COLUMNS, *([CONSENSUS] if consensus is not None else [])]])
        columns = [scores[name].tolist() for name in ("complex_id", "pose_id", "pecan_score", "pecan_rank", "rmsd")]
        clashes = scores[["pecan_clash", "receptor_distance"]].to_numpy(dtype=float).tolist()
        labels = scores["label"].tolist()
        start = 0
        for seq, mols, texts, labeled in groups:
            records = []
            for k, mol in enumerate(mols, start):
                complex_id, pose_id, score, rank, rmsd = (column[k] for column in columns)
                properties = {
                    "pecan_complex": str(complex_id),
                    "pecan_pose": str(pose_id),
                    "pecan_score": float(score),
                    **({CONSENSUS: f"{consensus[k]:.4f}"} if consensus is not None else {}),
                    "pecan_rank": int(rank),
                    "pecan_clash": int(clashes[k][0]),
                    "receptor_distance": f"{clashes[k][1]:.2f}",
                }
                if labeled and not math.isnan(float(rmsd)):
                    properties.update(rmsd=float(rmsd), label=int(labels[k]))
                text = texts[k - start] if texts is not None else None
                text = text if text is not None else rdkit_record(mol)  # mol2, PDB, PDBQT: no SDF text
                records.append(with_properties(text, properties))
            start += len(mols)
            block = b"".join(records)
            self._sdf.write(block)
            if self._groups is not None:
                self._groups.write(f"{seq},{len(mols)},{len(block)}\n")
            self.written += len(mols)

    def flush(self) -> None:
        """Write the scores CSV rows of the groups written since the last flush (one pandas call a chunk)."""
        if self._pending:
            with named_write_errors(self.paths["the scores CSV"]):
                self._flush()

    def _flush(self) -> None:
        if self._pending:
            pd.concat(self._pending, ignore_index=True).to_csv(self._csv, header=self._header, index=False)
            self._header, self._pending = False, []

    def failure(self, complex_id: str, pose_id: str, source: str, reason: str, seq: int = 0) -> None:
        """One row of the failures file (``pose_id`` empty: the whole ligand)."""
        with named_write_errors(self.paths["the failures CSV"]):
            self._failures.writerow(([seq] if self.part else []) + [complex_id, pose_id, source, reason])
        if not self.first_failure:
            self.first_failure = f"ligand {complex_id} pose {pose_id or '(all)'}: {reason}"
        if pose_id:
            self.failed_poses += 1
            self._itemised.add(complex_id)
        elif complex_id not in self._itemised:  # a ligand whose every pose has its own row is not counted twice
            self.failed_ligands += 1

    def commit(self, values: dict[str, Any]) -> None:
        """Write the metrics JSON, close every file and rename each onto its destination."""
        self._close_writers()
        if self._header:  # nothing scored: scores.csv still gets its header
            with named_write_errors(self.paths["the scores CSV"]):
                pd.DataFrame(columns=list(SCREEN_COLUMNS)).to_csv(self._temps["the scores CSV"], index=False)
        with named_write_errors(self.paths["the metrics JSON"]):
            self._temps["the metrics JSON"].write_text(json_text(values, indent=2, default=float))
        commit_together([(self._temps[what], path) for what, path in self.paths.items()])

    def abort(self, error: BaseException) -> None:
        """Remove the temporary files; every destination keeps what it held. ``error`` is already being raised:
        a file that fails again as it is closed (a full disk) is closed and removed all the same, silently."""
        try:
            self._close_writers(quiet=True)
        finally:
            discard_temps(list(self._temps.values()))

    def _close_writers(self, quiet: bool = False) -> None:
        """Flush and close every file (each one even when another fails); StorageError naming the first that
        failed, unless ``quiet``."""
        if self._sdf is None:
            return
        first: StorageError | None = None
        handles = [(None, self.flush), ("--out", self._sdf.close), ("the scores CSV", self._csv.close)]
        handles.append(("the failures CSV", self._failures_file.close))
        if self._groups is not None:
            handles.append(("the groups log", self._groups.close))
        self._sdf = None
        if quiet:
            self._pending = []  # nothing more is written
        for what, close in handles:
            try:
                if what is None:
                    if not quiet:
                        close()
                    continue
                with named_write_errors(self.paths[what]):
                    close()
            except StorageError as err:
                first = first or err
        if first is not None and not quiet:
            raise first

    def merge_parts(self, parts: list[Path]) -> None:
        """Join the ranks' committed parts (their ``--out`` paths, rank order) into this output in input order:
        groups by their number, each group's CSV rows and SDF records as the rank wrote them (the records'
        bytes copied whole); failure rows sorted by group number. The parts are not removed."""
        self._close_writers_for_merge()
        logs = []
        for rank, part in enumerate(parts):
            for line in output_paths(part)["--out"].with_suffix(".groups").read_text().splitlines():
                seq, count, size = line.split(",")
                logs.append((int(seq), rank, int(count), int(size)))
        csvs = [open(output_paths(p)["the scores CSV"]) for p in parts]
        sdfs = [open(p, "rb") for p in parts]
        try:
            with open(self._temps["the scores CSV"], "w") as csv_out, open(self._temps["--out"], "wb") as sdf_out:
                header = [handle.readline() for handle in csvs]
                if logs:
                    csv_out.write(next(h for h in header if h))
                    self._header = False
                for _, rank, count, size in sorted(logs):
                    for _ in range(count):
                        csv_out.write(csvs[rank].readline())
                    sdf_out.write(sdfs[rank].read(size))
                    self.written += count
        finally:
            for handle in csvs + sdfs:
                handle.close()
        rows = []
        for part in parts:
            with open(output_paths(part)["the failures CSV"], newline="") as handle:
                reader = csv.reader(handle)
                next(reader)
                rows.extend(reader)
        for row in sorted(rows, key=lambda r: int(r[0])):
            self.failure(*row[1:])

    def _close_writers_for_merge(self) -> None:
        """Close the SDF and CSV writers (the merge writes those files itself); the failures writer stays."""
        self._sdf.close()
        self._csv.close()


def ranked(logits: np.ndarray, last=None, by=None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(order, score, rank) of one ligand's logits: PECAN score (the sigmoid, in float64), rank 1 = best with
    ties in input order (as pandas' ``rank(method="first")`` of the descending score), and the rank order.
    ``by`` ranks by other values instead of the score (higher = better: the consensus,
    ``pecan.scoring.consensus``). Poses marked in ``last`` (clashes, ``pecan.scoring.clashes``) rank after every
    other, in the same order among themselves."""
    score = 1.0 / (1.0 + np.exp(-logits.astype(np.float64)))
    value = score if by is None else np.asarray(by, dtype=np.float64)
    clash = np.zeros(len(score)) if last is None else np.asarray(last, dtype=bool).astype(np.float64)
    order = np.lexsort((-value, clash))  # clashes last, each part by value; stable: ties in input order
    rank = np.empty(len(score), dtype=np.int64)
    rank[order] = np.arange(1, len(score) + 1)
    return order, score, rank
