"""The EGNN's settings, the one home of their defaults. A module of its own, free of torch, so the app
config can reuse it without importing the model (variants are imported only when selected)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from model.settings import setting


@dataclass
class EGNNConfig:
    """The EGNN's settings: the single home of their defaults (the app's ``model:`` section reuses them)."""

    hidden: int = setting("Hidden width of node embeddings and messages.", 64)
    layers: int = setting("Number of message-passing layers.", 4)
    attention: bool = setting("Gate each message with a learned soft edge weight.", True)
    update_coords: bool = setting("Let layers update coordinates equivariantly.", False)
    use_pose_features: bool = setting("Feed the 5 interaction counts to the classifier head.", True)
    use_docking_score: bool = setting(
        "Feed the pose's docking score to the classifier head (score/10, gap to the complex's best score/5, "
        "missing flag); needs a score column in the index.",
        False,
    )
    docking_prior: float = setting(
        "Start from the docking score's ranking (needs use_docking_score): the logit gets -w * (gap to the "
        "complex's best score / 5 kcal/mol), w a learned weight starting at this value, and the head's last layer "
        "starts at zero, so training learns only where the docking score is wrong. 0 turns it off.",
        0.0,
    )
    dropout: float = setting("Dropout in each layer's node update and in the classifier head.", 0.0)
    rbf: int = setting("Radial basis functions expanding each edge length.", 16)
    cutoff: float = setting("Largest distance (Angstrom) the radial basis covers; match data.edge_cutoff.", 4.5)

    def problems(self, config) -> list[tuple[str, str]]:
        """(key, message) for every value this variant cannot run with."""
        out = [(f"model.{k}", "must be >= 1") for k in ("hidden", "layers", "rbf") if getattr(self, k) < 1]
        if not 0.0 <= self.dropout < 1.0:
            out.append(("model.dropout", "must be in [0, 1)"))
        if self.cutoff <= 0:
            out.append(("model.cutoff", "must be > 0"))
        if self.docking_prior < 0:
            out.append(("model.docking_prior", "must be >= 0 (0 turns it off)"))
        elif self.docking_prior > 0 and not self.use_docking_score:
            needs = "needs model.use_docking_score: true (the prior reads the docking score)"
            out.append(("model.docking_prior", needs))
        return out


# Fields added after configs were first stored: a settings object without one gets the default, which is the
# behaviour from before the field existed.
LATER_FIELDS = {"use_docking_score": False, "docking_prior": 0.0}


def config_fields(cfg: Any) -> dict[str, Any]:
    """The :class:`EGNNConfig` fields read from ``cfg``; a missing attribute is an error, not a default
    (except a field of ``LATER_FIELDS``)."""
    return {
        f.name: getattr(cfg, f.name, LATER_FIELDS[f.name]) if f.name in LATER_FIELDS else getattr(cfg, f.name)
        for f in dataclasses.fields(EGNNConfig)
    }
