"""An ensemble of checkpoints scored as one model: each pose's score is the mean of the members'
probabilities (GNINA's default model is such an ensemble of five CNNs).

``pecan predict A.pt B.pt ...`` builds one ``MeanProbability`` of the members' models; the members must agree on
every setting that shapes a sample (``pecan.scoring.checkpoint.scoring_config`` checks each against the config
scoring runs under), so one pass over the poses feeds them all. The split column of scores.csv reads the union
of the members' training and validation complexes: a complex any member trained on is 'train'.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Optional, Sequence

import torch

from pecan.engine.pins import score_property_default
from pecan.engine.state import CheckpointState
from pecan.runtime.errors import ConfigError


class MeanProbability(torch.nn.Module):
    """The logit of the mean of the members' probabilities, computed in log space (exact where a member's
    probability rounds to 0 or 1 in float32): log(mean sigmoid(z)) - log(mean sigmoid(-z))."""

    def __init__(self, members: Sequence[torch.nn.Module]):
        super().__init__()
        if not members:
            raise ValueError("an ensemble needs at least one member")
        self.members = torch.nn.ModuleList(members)

    def forward(self, batch) -> torch.Tensor:
        logits = torch.stack([member(batch).float() for member in self.members])
        positive = torch.logsumexp(torch.nn.functional.logsigmoid(logits), dim=0)
        negative = torch.logsumexp(torch.nn.functional.logsigmoid(-logits), dim=0)
        return positive - negative  # log K cancels


def merged_record(records: Sequence[Optional[dict[str, Any]]]) -> Optional[dict[str, list[str]]]:
    """The members' split records as one: train is every complex a member trained on, val every complex a
    member validated on and none trained on; None when a member has no record (the split is then unknown)."""
    if any(not isinstance(record, dict) for record in records):
        return None
    train = set().union(*(record.get("train", ()) for record in records))
    val = set().union(*(record.get("val", ()) for record in records)) - train
    return {"train": sorted(train), "val": sorted(val)}


def ensemble_state(states: Sequence[CheckpointState], paths: Sequence[Path]) -> CheckpointState:
    """What `pecan score` reads of the checkpoint for an ensemble: the first member's state with every member's
    split record (``merged_record``). The members must read the same docking-score input (the same SD property,
    or none): ConfigError naming the first that does not. A member that takes no docking score reads none,
    whatever property its training data recorded: two structure-only members agree."""
    first = docking_input(states[0])
    for state, path in zip(states[1:], paths[1:]):
        other = docking_input(state)
        if other != first:
            raise ConfigError(
                f"pecan score: the ensemble's members read different docking-score inputs: {paths[0]} "
                f"{_describe(first)}, {path} {_describe(other)}; score them separately"
            )
    if len(states) == 1:
        return states[0]
    return dataclasses.replace(states[0], complexes=merged_record([state.complexes for state in states]))


def docking_input(state: CheckpointState) -> tuple[str, bool]:
    """(the SD property the model reads its docking score from, True), or ('', False) for a model that takes
    none (its training data's recorded property is then never read)."""
    prop, needed = score_property_default(state)
    return (prop, True) if needed else ("", False)


def _describe(default: tuple[str, bool]) -> str:
    prop, needed = default
    return f"reads SD property {prop!r}" if needed else "takes no docking score"
