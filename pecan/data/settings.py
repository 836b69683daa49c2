"""The data package's settings objects: each part is built once from its own (``from_data`` of the ``data``
config section), never from a dozen copied keywords.

``IndexSettings``: how one split's index rows are found and labelled (build_index, derive_index).
``ReaderSettings``: how a dataset turns index rows into samples (H5PoseDataset, PackedDataset).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pecan.data import layout
from pecan.runtime.keywords import same_named


@dataclass(frozen=True)
class IndexSettings:
    """How one split's index rows are found and labelled: each field is the ``data.`` key of its name
    (``labels_optional`` excepted: scoring new poses needs no answer), and all are in a derived index's key."""

    pose_group: str
    crystal_group: str
    use_crystal: bool
    rmsd_threshold: float
    on_bad_sample: str = "error"
    labels_optional: bool = False
    label_source: str = "auto"
    label_conflict: str = "error"

    @classmethod
    def from_data(cls, data: Any, **changes: Any) -> IndexSettings:
        """The settings of a data config section (DataConfig), with ``changes`` on top."""
        return cls(**same_named(data, cls, **{"labels_optional": False, **changes}))

    def labels(self) -> dict[str, Any]:
        """The keywords of read_index_csv and normalise that decide labels."""
        return dict(
            labels_optional=self.labels_optional, label_source=self.label_source, label_conflict=self.label_conflict
        )


@dataclass(frozen=True)
class ReaderSettings:
    """How a dataset turns index rows into samples: each field is the ``data.`` key of its name (``in_memory``
    excepted: a benchmark's choice). The graph fields (groups to ``max_edges``) are a pack's parameters too;
    the packed dataset reads only ``on_bad_sample``, ``augment`` and ``in_memory``."""

    pose_group: str = layout.DEFAULT_POSE_GROUP
    crystal_group: str = layout.DEFAULT_CRYSTAL_GROUP
    pocket_radius: float = 6.0
    edge_cutoff: float = 4.5
    rmsd_threshold: float = 2.0
    max_atoms: int = 0
    max_edges: int = 0
    io_mode: str = "handle_cache"
    on_bad_sample: str = "error"
    augment: bool = False
    decode_cache: bool = True
    in_memory: bool = False

    @classmethod
    def from_data(cls, data: Any, **changes: Any) -> ReaderSettings:
        """The settings of a data config section (DataConfig), with ``changes`` on top."""
        return cls(**same_named(data, cls, **{"in_memory": False, **changes}))
