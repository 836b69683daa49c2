"""Model registry: finds a model variant by name or legacy ``nn_type`` number.

A variant's module is imported only when that variant is built, so a run that uses the EGNN
never needs the compiled extensions other variants depend on.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch


@dataclass(frozen=True)
class Variant:
    """One registered model variant."""

    name: str
    """Registry name, as written in the config."""
    nn_type: int
    """Number used for this variant by legacy configs."""
    module: str | None
    """Module whose ``build(cfg)`` makes the model; None when not part of this release."""


# The legacy numbering: 3 is the EGNN; the others name variants of earlier PECAN/FAST codes.
_VARIANTS = (
    Variant("cnn3d", 0, None),
    Variant("sgcnn", 1, None),
    Variant("ggcnn", 2, None),
    Variant("egnn", 3, "model.egnn"),
)
_BY_NAME = {variant.name: variant for variant in _VARIANTS}
_BY_NN_TYPE = {variant.nn_type: variant for variant in _VARIANTS}


def available() -> list[str]:
    """Names of the variants that can be built in this release."""
    return [variant.name for variant in _VARIANTS if variant.module is not None]


def known() -> list[str]:
    """Names of all registered variants, buildable or not."""
    return [variant.name for variant in _VARIANTS]


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
        raise ValueError(f"no model selected: give a name ({', '.join(known())}) or an nn_type")
    key = name.strip().lower()
    if key not in _BY_NAME:
        raise ValueError(f"unknown model {name!r}; valid: {', '.join(known())}")
    return key


def build_model(name: str | None, cfg, nn_type: int | None = None) -> torch.nn.Module:
    """Build the selected variant from its config section ``cfg``."""
    variant = _BY_NAME[resolve_name(name, nn_type)]
    if variant.module is None:
        raise NotImplementedError(
            f"model {variant.name!r} is not implemented in this release; "
            f"available: {', '.join(available())}"
        )
    return importlib.import_module(variant.module).build(cfg)
