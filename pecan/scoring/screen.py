"""The scoring loop of `pecan score`: ligand groups in, scored groups out, a chunk at a time.

Groups (``pecan.scoring.inputs``) are gathered into chunks of about ``chunk_poses`` poses, so that batches
span ligands while memory stays bounded by one chunk (plus the largest group). Per chunk:

1. **convert**: each group featurised as the converter does (``featurise.GroupConverter``); a pose or ligand
   that cannot be converted is a row of the failures file, never a stop;
2. **graph**: the index rows and sample fields of the chunk (``memory.converted_index``, ``SampleTable``: the
   docking-score features, labels), then each pose's graph (``graphs.pose_graph``); a pose whose graph
   fails the data path's checks (too many atoms, no pocket, bad geometry) is a failure row too;
3. **model**: the graphs in batches of ``batch_size`` through the model (no PyG: ``graphs.GraphBatch``);
4. **write**: each group's poses ranked and written (``output.ScoredOutput``).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator, Optional

import numpy as np
import pandas as pd
import torch

from pecan.data.sample import SampleTable
from pecan.engine.pins import assign_splits
from pecan.engine.state import CheckpointState
from pecan.runtime.errors import ConfigError, DataError, NotANumber
from pecan.runtime.numbers import read_docking_score
from pecan.scoring.clashes import receptor_contacts
from pecan.scoring.consensus import COLUMN as CONSENSUS
from pecan.scoring.consensus import consensus
from pecan.scoring.featurise import GroupConverter, LigandGroup
from pecan.scoring.graphs import batches, checked_pose_features, pose_graph
from pecan.scoring.memory import StageClock, converted_index
from pecan.scoring.output import ScoredOutput, ranked

log = logging.getLogger("pecan")

CHUNK_POSES = 512
"""Poses gathered before a chunk is scored: batches span ligands, memory stays bounded."""
BATCH_SIZE = 16
"""Graphs per forward pass when scoring (logits do not depend on it). Small on purpose: a pose's graph has
~2,000 edges, and the edge tensors of 16 graphs stay in a core's cache, where 64 graphs' stream from memory
(the forward ~20% slower per pose on one thread; BENCHMARKS.md, `pecan score`)."""


def counter_factory():
    """The interaction counter: ``pecan.convert.contacts.ContactCounter``, the converter's ProLIF counts
    evaluated with numpy (equal to them; tests/convert/test_contacts.py, benchmarks/bench_contacts.py)."""
    from pecan.convert.contacts import ContactCounter

    return ContactCounter


def chunks(groups: Iterable[LigandGroup], chunk_poses: int, clock: StageClock) -> Iterator[list[LigandGroup]]:
    """Consecutive groups with about ``chunk_poses`` poses in all (a larger group is a chunk of its own); the
    time spent reading records is the ``parse`` stage."""
    chunk, poses = [], 0
    iterator = iter(groups)
    while True:
        with clock.timed("parse"):
            group = next(iterator, None)
        if group is None:
            break
        chunk.append(group)
        poses += len(group.records)
        if poses >= chunk_poses:
            yield chunk
            chunk, poses = [], 0
    if chunk:
        yield chunk


@dataclass
class Scored:
    """A chunk's figures kept for the metrics: per pose its complex, split, score, logit, docking score,
    rmsd and label (only while every pose so far has a label; else just the counts)."""

    poses: int = 0
    complexes: int = 0
    split_poses: dict = field(default_factory=dict)
    split_complexes: dict = field(default_factory=dict)
    split_clashes: dict = field(default_factory=dict)  # poses flagged pecan_clash, per split
    labeled_rows: Optional[list] = field(default_factory=list)  # None once a pose without a label is scored

    def add(self, scores: pd.DataFrame, sizes: list[int]) -> None:
        """The scores.csv rows (with their logits) of consecutive groups of ``sizes`` rows each."""
        self.poses += len(scores)
        self.complexes += len(sizes)
        firsts = np.cumsum([0, *sizes[:-1]])
        for split, size in zip(scores["split"].to_numpy()[firsts], sizes):
            self.split_poses[split] = self.split_poses.get(split, 0) + size
            self.split_complexes[split] = self.split_complexes.get(split, 0) + 1
        for split, count in scores.groupby("split")["pecan_clash"].sum().items():
            self.split_clashes[split] = self.split_clashes.get(split, 0) + int(count)
        if self.labeled_rows is not None:
            if scores["label"].isna().any():
                self.labeled_rows = None
            else:
                self.labeled_rows.append(scores)

    @classmethod
    def merged(cls, parts: list["Scored"]) -> "Scored":
        """The ranks' figures as one (labelled rows kept only when every rank kept its own)."""
        whole = cls()
        for part in parts:
            whole.poses += part.poses
            whole.complexes += part.complexes
            for split, count in part.split_poses.items():
                whole.split_poses[split] = whole.split_poses.get(split, 0) + count
            for split, count in part.split_complexes.items():
                whole.split_complexes[split] = whole.split_complexes.get(split, 0) + count
            for split, count in part.split_clashes.items():
                whole.split_clashes[split] = whole.split_clashes.get(split, 0) + count
            if whole.labeled_rows is not None:
                whole.labeled_rows = None if part.labeled_rows is None else whole.labeled_rows + part.labeled_rows
        return whole

    def values(self) -> dict[str, Any]:
        """The figures of ``pecan.scoring.figures.split_metrics`` over every scored pose."""
        from pecan.scoring.figures import HELD_OUT_FIRST, split_metrics

        if self.labeled_rows:
            return split_metrics(pd.concat(self.labeled_rows, ignore_index=True))
        clashes = sum(self.split_clashes.values())
        values: dict[str, Any] = {"poses": self.poses, "complexes": self.complexes, "clashes": clashes}
        values["labeled"] = False
        values["splits"] = {
            split: {
                "poses": self.split_poses[split],
                "complexes": self.split_complexes[split],
                "clashes": self.split_clashes.get(split, 0),
                "labeled": False,
            }
            for split in HELD_OUT_FIRST
            if split in self.split_poses
        }
        return values


class ScreenRun:
    """Scores chunks of ligand groups with one model and writes them to one ``ScoredOutput``."""

    def __init__(
        self,
        config,
        model: torch.nn.Module,
        device: torch.device,
        converter: GroupConverter,
        output: ScoredOutput,
        *,
        state: CheckpointState,
        batch_size: int,
        needs_docking_score: bool,
        clock: StageClock,
        docking_weight: float = 0.0,
    ) -> None:
        self.config, self.model, self.device = config, model, device
        self.converter, self.output, self.state = converter, output, state
        self.batch_size, self.needs_docking_score, self.clock = batch_size, needs_docking_score, clock
        self.docking_weight = docking_weight  # > 0: rank by the consensus (pecan.scoring.consensus)
        self.scored = Scored()

    def score_chunk(self, chunk: list[LigandGroup]) -> int:
        """Convert, build, score and write one chunk; the number of poses scored."""
        converted = []
        for group in chunk:
            self._check_docking_scores(group)
            with self.clock.timed("convert"):
                item = self.converter.convert(group)
            for failure in item.failures:
                self._fail(group, failure["pose_id"], failure["reason"], failure["complex_id"])
            if item.poses:
                converted.append((group, item))
        if not converted:
            return 0
        with self.clock.timed("graph"):
            frame, samples = converted_index([item for _, item in converted], self.config.data)
            frame["receptor_distance"], frame["pecan_clash"] = receptor_contacts(samples)
            table = SampleTable.from_index(frame)
            graphs, rows = self._graphs(table, samples, {item.complex_id: g for g, item in converted})
        logits = np.full(len(table), np.nan, dtype=np.float32)
        with self.clock.timed("model"):
            self._forward(graphs, table, np.asarray(rows, dtype=np.int64), logits)
        with self.clock.timed("write"):
            return self._write(converted, frame, logits)

    def _check_docking_scores(self, group: LigandGroup) -> None:
        """A model that takes docking scores, or a consensus with them (--docking-weight), needs one on every
        record: ConfigError naming property and file."""
        if not self.needs_docking_score and not self.docking_weight:
            return
        prop = group.score_property
        mols = [m for m in group.records if m is not None]
        missing = [k for k, mol in enumerate(mols, start=1) if not prop or not mol.HasProp(prop)]
        if missing:
            needs = (
                "the checkpoint's model takes each pose's docking score (model.use_docking_score)"
                if self.needs_docking_score
                else f"--docking-weight {self.docking_weight:g} ranks by a consensus with each pose's docking score"
            )
            raise ConfigError(
                f"pecan score: {needs}, "
                f"but {len(missing)} of {len(mols)} records of ligand {group.complex_id} in {group.source} have no "
                f"SD property {prop!r} (first: record {missing[0]}); name the property holding it with "
                f"--score-property, or give the scores in a CSV with --scores-csv FILE --score-column NAME (the "
                f"way for mol2 and PDB poses, which have no SD properties)"
            )
        for number, mol in enumerate(group.records, start=1):
            title = mol.GetProp("_Name") if mol is not None and mol.HasProp("_Name") else ""
            where = f"{group.source}, ligand {group.complex_id} pose {number} (title {title!r}), SD property {prop!r}"
            try:
                if mol is not None:
                    read_docking_score(mol.GetProp(prop), where)
            except NotANumber as err:
                raise ConfigError(f"pecan score: {err}") from None

    def _fail(self, group: LigandGroup, pose_id: str, reason: str, complex_id: Optional[str] = None) -> None:
        complex_id = group.complex_id if complex_id is None else complex_id
        log.warning("not scored: ligand %s pose %s: %s", complex_id, pose_id or "(all)", reason)
        self.output.failure(complex_id, pose_id, group.source, reason, group.seq)

    def _graphs(self, table: SampleTable, samples: list, groups: dict) -> tuple[list, list[int]]:
        graphs, rows = [], []
        for i, sample in enumerate(samples):
            where = f"ligand {table.complex_id[i]}, pose {table.pose_id[i]}"
            try:
                checked_pose_features(table, i)
                graphs.append(pose_graph(sample.data, sample.vdw, self.config.data, where))
                rows.append(i)
            except DataError as err:
                self._fail(groups[table.complex_id[i]], str(table.pose_id[i]), str(err))
        return graphs, rows

    def _forward(self, graphs: list, table: SampleTable, rows: np.ndarray, logits: np.ndarray) -> None:
        from pecan.engine.amp import amp_context

        # Subnormal floats flushed to zero while the model runs: the distance expansion's Gaussians underflow
        # to subnormals on every long edge, and x86 arithmetic on them is many times slower (the values change
        # by < 1e-38). The flag is per thread and set back at once, so no other stage computes with it.
        torch.set_flush_denormal(True)
        try:
            with torch.inference_mode():
                for batch in batches(graphs, table, rows, self.batch_size):
                    batch = batch.to(self.device)
                    with amp_context(self.device, self.config.train.amp):
                        values = self.model(batch).float()
                    logits[batch.sample_id.cpu().numpy()] = values.cpu().numpy().reshape(-1)
        finally:
            torch.set_flush_denormal(False)

    def _write(self, converted: list, frame: pd.DataFrame, logits: np.ndarray) -> int:
        """Each group's scored poses, ranked, to the outputs; a group none of whose poses scored is a failure.
        The chunk's rows make one table (scores.csv's columns and the logits, each group in rank order)."""
        start, kept = 0, []
        for group, item in converted:
            first, start = start, start + len(item.poses)
            rows = np.arange(first, start)
            rows = rows[np.isfinite(logits[rows])]
            if len(rows) == 0:
                self._fail(group, "", "no pose of this ligand could be scored (see its poses)")
                continue
            by = None
            if self.docking_weight:
                docking = frame["docking_score"].to_numpy(dtype=np.float64)[rows]
                by = consensus(logits[rows], docking, self.docking_weight)
            order, score, rank = ranked(logits[rows], frame["pecan_clash"].to_numpy()[rows], by)
            kept.append((group, rows[order], score[order], rank[order], None if by is None else by[order]))
        if not kept:
            self.output.flush()
            return 0
        rows = np.concatenate([k[1] for k in kept])
        sizes = [len(k[1]) for k in kept]
        names = [group.complex_id for group, *_ in kept]
        splits = assign_splits(pd.Series(names), self.state.complexes, set(names))
        known = frame.iloc[rows]
        table = pd.DataFrame(
            {
                "complex_id": known["complex_id"].to_numpy(dtype=object),
                "pose_id": known["pose_id"].to_numpy(dtype=object),
                "split": np.repeat(np.asarray(splits, dtype=object), sizes),
                "pecan_score": np.concatenate([k[2] for k in kept]),
                "pecan_rank": np.concatenate([k[3] for k in kept]),
                "docking_score": known["docking_score"].to_numpy(dtype=float),
                "rmsd": known["rmsd"].to_numpy(dtype=float),
                "label": known["label"].reset_index(drop=True),  # its index dtype: 1, not 1.0, in the CSV
                "pecan_clash": known["pecan_clash"].to_numpy(dtype=np.int64),
                "receptor_distance": known["receptor_distance"].to_numpy(dtype=float),
                "logit": logits[rows],
            }
        )
        if self.docking_weight:
            table[CONSENSUS] = np.concatenate([k[4] for k in kept])
        labeled, pose_ids = table["label"].notna().to_numpy(), table["pose_id"].tolist()
        groups, end = [], 0
        for (group, *_), size in zip(kept, sizes):
            end += size
            record_of = {pose_id: k for k, pose_id in enumerate(_pose_ids(group))}
            records = [record_of[pose_id] for pose_id in pose_ids[end - size : end]]
            texts = None if group.texts is None else [group.texts[k] for k in records]
            mols = [group.records[k] for k in records]
            groups.append((group.seq, mols, texts, bool(labeled[end - size : end].all())))
        self.output.write_groups(table, groups)
        self.scored.add(table, sizes)
        self.output.flush()
        return len(rows)


def _pose_ids(group: LigandGroup) -> list[str]:
    from pecan.convert.complexes import pose_ids

    return pose_ids(group.complex_id, group.records)
