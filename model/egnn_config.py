"""The EGNN's settings, the one home of their defaults. A module of its own, free of torch, so the app
config can reuse it without importing the model (variants are imported only when selected)."""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any


def _setting(default: Any, doc: str) -> Any:
    """A config field with its documentation (rendered into the README's config table)."""
    return field(default=default, metadata={"doc": doc})


@dataclass
class EGNNConfig:
    """The EGNN's settings: the single home of their defaults (the app's ``model:`` section reuses them)."""

    hidden: int = _setting(64, "Hidden width of node embeddings and messages.")
    layers: int = _setting(4, "Number of message-passing layers.")
    attention: bool = _setting(True, "Gate each message with a learned soft edge weight.")
    update_coords: bool = _setting(False, "Let layers update coordinates equivariantly.")
    use_pose_features: bool = _setting(True, "Feed the 5 interaction counts to the classifier head.")
    dropout: float = _setting(0.0, "Dropout in each layer's node update and in the classifier head.")
    rbf: int = _setting(16, "Radial basis functions expanding each edge length.")
    cutoff: float = _setting(4.5, "Largest distance (Angstrom) the radial basis covers; match data.edge_cutoff.")


def config_fields(cfg: Any) -> dict[str, Any]:
    """The :class:`EGNNConfig` fields read from ``cfg``; a missing attribute is an error, not a default."""
    return {f.name: getattr(cfg, f.name) for f in dataclasses.fields(EGNNConfig)}
