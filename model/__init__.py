"""Model registry: finds a model variant by name or legacy ``nn_type`` number.

A variant's module is imported only when that variant is built (or its config keys are parsed), so a run
that uses the EGNN never imports the other variants or the compiled extensions they may pick up.

Names are the primary interface; the numbers are those of legacy ``model.nn_type`` configs:

| name | nn_type | module | what it is |
|---|---|---|---|
| `cnn3d` | 0 | `model.cnn3d` | 3D CNN over a Gaussian voxel grid built per batch on the device |
| `sgcnn` | 1 | `model.sgcnn` | PotentialNet-style spatial graph CNN: covalent then non-covalent stage |
| `ggcnn` | 2 | `model.ggcnn` | gated graph CNN baseline, edge types as edge labels |
| `egnn` | 3 | `model.egnn` | E(n)-equivariant GNN (the default) |
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Optional

if TYPE_CHECKING:
    import torch


@dataclass(frozen=True)
class Variant:
    """One registered model variant."""

    name: str
    """Registry name, as written in the config."""
    nn_type: int
    """Number used for this variant by legacy configs."""
    module: str
    """Module whose ``build(cfg)`` makes the model."""
    config_class: Optional[str]
    """Name of the variant's config dataclass in ``module``; None: its keys are ModelConfig's own."""
    summary: str
    """One line on what the variant is."""


_VARIANTS = (
    Variant("cnn3d", 0, "model.cnn3d", "CNN3DConfig",
            "3D CNN over a Gaussian voxel grid built per batch on the device"),
    Variant("sgcnn", 1, "model.sgcnn", "SGCNNConfig",
            "PotentialNet-style spatial graph CNN: covalent then non-covalent stage"),
    Variant("ggcnn", 2, "model.ggcnn", "GGCNNConfig", "gated graph CNN baseline, edge types as edge labels"),
    Variant("egnn", 3, "model.egnn", None, "E(n)-equivariant GNN (the default)"),
)
_BY_NAME = {variant.name: variant for variant in _VARIANTS}
_BY_NN_TYPE = {variant.nn_type: variant for variant in _VARIANTS}


def available() -> list[str]:
    """Names of the variants that can be built in this release."""
    return [variant.name for variant in _VARIANTS]


def table() -> str:
    """The markdown table of names, legacy numbers, modules and summaries (as in this module's docstring)."""
    lines = ["| name | nn_type | module | what it is |", "|---|---|---|---|"]
    lines += [f"| `{v.name}` | {v.nn_type} | `{v.module}` | {v.summary} |" for v in _VARIANTS]
    return "\n".join(lines)


def resolve_name(name: str | None = None, nn_type: int | None = None) -> str:
    """Return the registry name selected by the legacy ``nn_type`` when given, else by ``name``.

    The number wins because configs always carry a default name; a number is only ever set on
    purpose, by a legacy config. Raises ValueError for an unknown name or number.
    """
    if nn_type is not None:
        if isinstance(nn_type, bool) or nn_type not in _BY_NN_TYPE:
            numbers = ", ".join(f"{variant.nn_type} ({variant.name})" for variant in _VARIANTS)
            raise ValueError(f"unknown nn_type {nn_type!r}; valid: {numbers}")
        return _BY_NN_TYPE[nn_type].name
    if name is None:
        raise ValueError(f"no model selected: give a name ({', '.join(available())}) or an nn_type")
    key = name.strip().lower()
    if key not in _BY_NAME:
        raise ValueError(f"unknown model {name!r}; valid: {', '.join(available())}")
    return key


def config_class(name: str) -> Optional[type]:
    """The config dataclass of variant ``name`` (imports that variant's module), or None for the EGNN, whose
    keys ModelConfig itself carries."""
    variant = _BY_NAME[resolve_name(name)]
    if variant.config_class is None:
        return None
    return getattr(importlib.import_module(variant.module), variant.config_class)


def augments_inputs(cfg) -> bool:
    """Whether the selected variant transforms its inputs randomly in training (the decode cache must then
    be off); read from the model config section ``cfg`` without importing any variant."""
    name = resolve_name(getattr(cfg, "name", None), getattr(cfg, "nn_type", None))
    return name == "cnn3d" and bool(getattr(cfg, "augment", True))


def build_model(name: str | None, cfg, nn_type: int | None = None) -> torch.nn.Module:
    """Build the selected variant from its config section ``cfg``."""
    variant = _BY_NAME[resolve_name(name, nn_type)]
    return importlib.import_module(variant.module).build(cfg)
