"""A variant that exists only in tests: what a new variant needs is this module and a registry row."""

from dataclasses import dataclass

import torch

from model.settings import setting


@dataclass
class FakeConfig:
    """Keys of the ``fake`` test variant."""

    width: int = setting("Width of the only layer.", 4)
    jitter: bool = setting("Perturb the inputs in training.", False)

    def problems(self, config) -> list[tuple[str, str]]:
        """(key, message) for every value this variant cannot run with."""
        return [("model.width", "must be >= 1")] if self.width < 1 else []


def build(cfg, sizes: dict[str, int]) -> torch.nn.Module:
    """A linear layer of the configured width (the data's input sizes unused)."""
    return torch.nn.Linear(cfg.width, 1)
