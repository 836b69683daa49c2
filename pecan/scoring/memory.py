"""`pecan score` in memory: each poses file parsed once and its records kept, the converter's per-pose arrays
turned into graphs by the data path's own functions, no shard, index or pack written.

The converter (``pecan.convert.complexes.convert_complex``) gives each pose its 22-column atoms, radii and
attributes, as it would write them to a shard; ``converted_index`` makes the index rows `pecan convert` +
`pecan predict` would derive from that shard (``pecan.data.index_rows.normalise``), and ``MemoryPoseDataset``
is the HDF5 reader (``pecan.data.h5dataset.H5PoseDataset``: ``build_graph``, the geometry checks, the sample
fields, ``data.on_bad_sample``) with its shard read replaced by the kept arrays. Scores therefore equal those
of `pecan predict` on the converted shards (``tests/convert/test_score_memory.py``).
"""

from __future__ import annotations

import time
from collections import defaultdict
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Iterator, Optional

import numpy as np
import pandas as pd

from pecan.data import layout
from pecan.data.geometry import check_pose_features
from pecan.data.h5dataset import H5PoseDataset
from pecan.data.index_rows import normalise


@dataclass
class StageClock:
    """Seconds spent per stage of a scoring run (parse, convert, graph, model, write, ...), for the log and
    the benchmark."""

    seconds: dict[str, float] = field(default_factory=lambda: defaultdict(float))

    @contextmanager
    def timed(self, stage: str) -> Iterator[None]:
        """Add the wall time of the block to ``stage``."""
        start = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[stage] += time.perf_counter() - start


def converted_index(converted: list, data, source: str = "pecan score") -> tuple[pd.DataFrame, list]:
    """The index rows of the converted complexes' poses (crystal poses are never scored) and the samples in
    the same order; rows as ``pecan.data.index_derived`` derives them from a converted shard, with labels
    under the data section's rules."""
    rows, samples = [], []
    for item in converted:
        for sample in item.poses:
            attrs = sample.attrs
            row = {
                "shard": f"{source} (in memory)",
                "complex_id": item.complex_id,
                "pose_id": sample.pose_id,
                "label": layout.scalar(attrs, "label"),
                "rmsd": layout.scalar(attrs, "rmsd"),
                "affinity": item.affinity,
                "docking_score": layout.scalar(attrs, "score"),
                "is_crystal": 0,
            }
            row.update({name: layout.scalar(attrs, name) for name in layout.INTERACTION_ATTRS})
            rows.append(row)
            samples.append(sample)
    index = pd.DataFrame(rows, columns=list(layout.INDEX_COLUMNS))
    index = normalise(
        index,
        data.rmsd_threshold,
        source,
        labels_optional=True,
        label_source=data.label_source,
        label_conflict=data.label_conflict,
    )
    return index.reset_index(drop=True), samples


class MemoryPoseDataset(H5PoseDataset):
    """The HDF5 reader over poses held in memory: sample ``i`` is ``samples[i]`` (row ``i`` of ``index``), its
    atoms cast to float32 as the shard writer stores them. ``clock`` (optional) times the graph building."""

    def __init__(self, index: pd.DataFrame, samples: list, data, clock: Optional[StageClock] = None) -> None:
        super().__init__(
            index,
            pocket_radius=data.pocket_radius,
            edge_cutoff=data.edge_cutoff,
            rmsd_threshold=data.rmsd_threshold,
            io_mode="reopen",
            on_bad_sample=data.on_bad_sample,
            augment=False,
            decode_cache=False,
            max_atoms=data.max_atoms,
            max_edges=data.max_edges,
        )
        self.samples, self.clock = samples, clock

    def _open(self, shard_id: int):
        raise AssertionError("an in-memory dataset opens no shard")

    def _read(self, i: int) -> tuple[np.ndarray, float, np.ndarray, Optional[np.ndarray]]:
        sample = self.samples[i]
        where = self.table.where(i)
        features = check_pose_features(self.table.pose_features[i].astype(np.float64), where)
        atoms = np.asarray(sample.data, dtype=np.float32)
        vdw = None if sample.vdw is None else np.asarray(sample.vdw, dtype=np.float32)
        return atoms, float(self.table.label[i]), features, vdw

    def __getitems__(self, indices: list[int]):
        if self.clock is None:
            return super().__getitems__(indices)
        with self.clock.timed("graph"):
            return super().__getitems__(indices)
