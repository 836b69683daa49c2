"""`pecan score` in memory: the index rows of converted poses, and the clock of the scoring stages.

The converter (``pecan.convert.complexes.convert_complex``, or ``pecan.scoring.featurise`` at screening speed)
gives each pose its 22-column atoms, radii and attributes, as it would write them to a shard;
``converted_index`` makes the index rows `pecan convert` + `pecan predict` would derive from that shard
(labelled by ``pecan.data.index.IndexBuilder.label``), so the sample fields and labels are those of the shard
path and scores equal those of `pecan predict` on the converted shards (``tests/convert/test_score_memory.py``).
"""

from __future__ import annotations

import time
from collections import defaultdict
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Iterator

import pandas as pd

from pecan.data import layout
from pecan.data.index import IndexBuilder, IndexSettings


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
    columns: dict[str, list] = {name: [] for name in layout.INDEX_COLUMNS}
    samples = []
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
            for name, value in row.items():
                columns[name].append(value)
            samples.append(sample)
    index = pd.DataFrame(columns)  # by column: a frame of row dicts costs ~0.1 ms a pose to build
    settings = IndexSettings(
        layout.DEFAULT_POSE_GROUP,
        layout.DEFAULT_CRYSTAL_GROUP,
        False,
        data.rmsd_threshold,
        labels_optional=True,
        label_source=data.label_source,
        label_conflict=data.label_conflict,
    )
    index = IndexBuilder(settings).label(index, source)
    return index.reset_index(drop=True), samples
