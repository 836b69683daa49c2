"""The checkpoint as one typed state: what the trainer writes, resume restores and scoring reads.

On disk a checkpoint stays a plain dict of tensors and containers (``torch.load(weights_only=True)`` reads
it; ``pecan.engine.checkpoint`` writes and reads the file); ``CheckpointState`` is that dict with a name and
a type per entry, read once (``load``/``from_dict``) and written once (``to_dict``/``save``). A new entry is a
new field here. Files written before the format was versioned hold the same entries without
``format_version`` and load unchanged (``tests/engine/fixtures/legacy_corpus_egnn.pt``, an earlier shipped
model, is one).
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

FORMAT_VERSION = 1
"""The layout written today; a file without it predates versioning and has the same entries."""
VERSION_KEY = "format_version"
TRAINING_ONLY = ("optimizer", "scheduler", "rng", "world_size", "best", "records", "position")
"""Entries only a resumed run needs; a scoring-only checkpoint (``for_scoring``) leaves them out."""


@dataclass
class CheckpointState:
    """Every entry of a PECAN checkpoint; None is an entry the file does not hold."""

    model: dict[str, Any]
    """The model's weights, without DDP or torch.compile prefixes."""
    model_config: Optional[dict[str, Any]] = None
    """The ``model:`` section the weights were trained under (scoring rebuilds the variant from it)."""
    config: Optional[dict[str, Any]] = None
    """The whole run config (``Config.to_dict()``)."""
    config_digest: Optional[str] = None
    feature_layout: Any = None
    """The shards' feature layout the model was trained on."""
    sample_settings: Optional[dict[str, Any]] = None
    """Every setting that shapes a sample, keyed ``section.key`` (``pecan.engine.pins.sample_settings``)."""
    complexes: Optional[dict[str, Any]] = None
    """The complexes trained and validated on (``pins.split_record``), behind scores.csv's split column."""
    training_data: Optional[dict[str, Any]] = None
    """What the run trained on: kind, index digest, poses, complexes, the docking-score property."""
    epoch: Optional[int] = None
    """Epochs finished."""
    step: Optional[int] = None
    best_auc: Optional[float] = None
    metrics: Optional[dict[str, float]] = None
    """The last epoch's validation metrics."""
    optimizer: Optional[dict[str, Any]] = None
    scheduler: Optional[dict[str, Any]] = None
    rng: Optional[dict[str, Any]] = None
    world_size: Optional[int] = None
    best: Optional[dict[str, Any]] = None
    """The best-epoch selector's state."""
    records: Optional[str] = None
    """The epoch records, as JSON text."""
    position: Optional[dict[str, Any]] = None
    """Where in an epoch a mid-epoch checkpoint stopped."""
    extra: dict[str, Any] = field(default_factory=dict)
    """Entries this version does not name, kept so that a state read and written again loses nothing."""

    @classmethod
    def from_dict(cls, data: Any, path: str | os.PathLike = "<checkpoint>") -> "CheckpointState":
        """The typed state of a loaded checkpoint dict; ValueError naming ``path`` for a foreign file or one
        written by a newer PECAN."""
        if not isinstance(data, dict) or not isinstance(data.get("model"), dict):
            found = ", ".join(sorted(map(str, data))[:8]) if isinstance(data, dict) else type(data).__name__
            raise ValueError(f"not a PECAN checkpoint: {path} (no model weights; it holds {found or 'nothing'})")
        version = data.get(VERSION_KEY, FORMAT_VERSION)
        if not isinstance(version, int) or isinstance(version, bool) or version < 1:
            raise ValueError(f"not a PECAN checkpoint: {path} ({VERSION_KEY} {version!r})")
        if version > FORMAT_VERSION:
            raise ValueError(
                f"checkpoint {path} has format version {version}, newer than this PECAN reads "
                f"({FORMAT_VERSION}): use the PECAN that wrote it, or a newer one"
            )
        names = {f.name for f in dataclasses.fields(cls)} - {"extra"}
        known = {key: value for key, value in data.items() if key in names}
        extra = {key: value for key, value in data.items() if key not in names and key != VERSION_KEY}
        return cls(**known, extra=extra)

    @classmethod
    def load(cls, path: str | os.PathLike, map_location: Any = "cpu") -> "CheckpointState":
        """Read and check ``path`` (FileNotFoundError, or ValueError naming it when damaged or foreign)."""
        from pecan.engine.checkpoint import load_checkpoint

        return cls.from_dict(load_checkpoint(path, map_location), path)

    def to_dict(self) -> dict[str, Any]:
        """The plain dict written to disk: the format version and every entry the state holds."""
        entries = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "extra"}
        return {
            VERSION_KEY: FORMAT_VERSION,
            **self.extra,
            **{key: value for key, value in entries.items() if value is not None},
        }

    def save(self, path: str | os.PathLike) -> Path:
        """Write atomically (``pecan.engine.checkpoint.save_checkpoint``)."""
        from pecan.engine.checkpoint import save_checkpoint

        return save_checkpoint(path, self.to_dict())

    def for_scoring(self) -> "CheckpointState":
        """The same state without what only a resumed run needs (optimizer, scheduler, RNG, sampler, records)."""
        return dataclasses.replace(self, extra={}, **{key: None for key in TRAINING_ONLY})

    def require(self, name: str) -> Any:
        """An entry a resumed run needs; KeyError naming it when the file lacks it (a scoring-only checkpoint)."""
        value = getattr(self, name)
        if value is None:
            raise KeyError(name)
        return value

    def saved_section(self, section: str) -> dict[str, Any]:
        """One section of the stored run config ({} when the checkpoint predates stored configs)."""
        saved = self.config if isinstance(self.config, dict) else {}
        return dict(saved.get(section) or {})

    @property
    def docking_score_record(self) -> dict[str, Any]:
        """The training-data record's docking-score entry ({} when absent)."""
        return dict((self.training_data or {}).get("docking_score") or {})
