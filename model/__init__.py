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
from typing import TYPE_CHECKING, Any, Mapping, Optional

if TYPE_CHECKING:
    import torch


@dataclass(frozen=True)
class Variant:
    """One registered model variant: where it lives, its config and checks, and what it can do.

    Everything about a variant that the application needs is read from here, so adding one is a module
    plus a row; no other code names a variant.
    """

    name: str
    """Registry name, as written in the config."""
    module: str
    """Module whose ``build(cfg, sizes)`` makes the model from its config section and the data's input sizes."""
    config_class: str
    """``module:Class`` of the variant's config dataclass; its ``problems(config)`` method is the variant's
    value checks, returning (key, message) pairs. The EGNN's lives in a torch-free module of its own."""
    summary: str
    """One line on what the variant is."""
    nn_type: Optional[int] = None
    """Number used for this variant by legacy configs; None: a variant without one."""
    augment_key: Optional[str] = None
    """Config key that, when true, makes the model transform its inputs randomly in training (the decode
    cache must then be off); None: the variant never augments."""
    sample_keys: tuple[str, ...] = ()
    """Config keys that shape what the model sees of a sample (e.g. the voxel grid): pinned in checkpoints."""
    removed_keys: tuple[tuple[str, str], ...] = ()
    """(key, why) for each key the variant no longer has: a config or checkpoint that still sets one loads,
    with a warning naming it, and the value is ignored."""


_VARIANTS = (
    Variant(
        "cnn3d",
        "model.cnn3d",
        "model.cnn3d:CNN3DConfig",
        "3D CNN over a Gaussian voxel grid built per batch on the device",
        nn_type=0,
        augment_key="augment",
        sample_keys=("grid_size", "resolution", "radius_scale"),
    ),
    Variant(
        "sgcnn",
        "model.sgcnn",
        "model.sgcnn:SGCNNConfig",
        "PotentialNet-style spatial graph CNN: covalent then non-covalent stage",
        nn_type=1,
    ),
    Variant(
        "ggcnn",
        "model.ggcnn",
        "model.ggcnn:GGCNNConfig",
        "gated graph CNN baseline, edge types as edge labels",
        nn_type=2,
        removed_keys=(("edge_types", "the edge labels are the input contract's edge types"),),
    ),
    Variant("egnn", "model.egnn", "model.egnn_config:EGNNConfig", "E(n)-equivariant GNN (the default)", nn_type=3),
)
DEFAULT = "egnn"
_BY_NAME = {variant.name: variant for variant in _VARIANTS}
_BY_NN_TYPE = {variant.nn_type: variant for variant in _VARIANTS if variant.nn_type is not None}


def variant(name: str) -> Variant:
    """The registry entry of ``name`` (a registry name; see ``resolve_name`` for user input)."""
    return _BY_NAME[resolve_name(name)]


def available() -> list[str]:
    """Names of the variants that can be built in this release."""
    return [variant.name for variant in _VARIANTS]


def table() -> str:
    """The markdown table of names, legacy numbers, modules and summaries (as in this module's docstring)."""
    lines = ["| name | nn_type | module | what it is |", "|---|---|---|---|"]
    lines += [
        f"| `{v.name}` | {'' if v.nn_type is None else v.nn_type} | `{v.module}` | {v.summary} |" for v in _VARIANTS
    ]
    return "\n".join(lines)


def resolve_name(name: str | None = None, nn_type: int | None = None) -> str:
    """Return the registry name selected by the legacy ``nn_type`` when given, else by ``name``.

    The number wins because configs always carry a default name; a number is only ever set on
    purpose, by a legacy config. Raises ValueError for an unknown name or number.
    """
    if nn_type is not None:
        if isinstance(nn_type, bool) or nn_type not in _BY_NN_TYPE:
            numbers = ", ".join(f"{number} ({entry.name})" for number, entry in _BY_NN_TYPE.items())
            raise ValueError(f"unknown nn_type {nn_type!r}; valid: {numbers}")
        return _BY_NN_TYPE[nn_type].name
    if name is None:
        raise ValueError(f"no model selected: give a name ({', '.join(available())}) or an nn_type")
    key = name.strip().lower()
    if key not in _BY_NAME:
        raise ValueError(f"unknown model {name!r}; valid: {', '.join(available())}")
    return key


def config_class(name: str) -> type:
    """The config dataclass of variant ``name`` (imports the module that holds it)."""
    module, _, attr = variant(name).config_class.partition(":")
    return getattr(importlib.import_module(module), attr)


def problems(section, config) -> list[str]:
    """What is wrong with the model section ``section`` of the run config ``config``: one line per problem,
    each naming the key and its value (the variant's own ``problems`` checks)."""
    found = []
    for key, message in section.problems(config):
        value = getattr(section, key.split(".")[-1], None)
        found.append(f"'{key}' {message}, got {value!r}")
    return found


def augments_inputs(cfg) -> bool:
    """Whether the selected variant transforms its inputs randomly in training (the decode cache must then
    be off); read from the model config section ``cfg`` without importing any variant."""
    entry = _BY_NAME[resolve_name(getattr(cfg, "name", None), getattr(cfg, "nn_type", None))]
    return entry.augment_key is not None and bool(getattr(cfg, entry.augment_key, False))


def removed_keys(name: str) -> dict[str, str]:
    """{key: why} of the keys variant ``name`` no longer has (see ``Variant.removed_keys``)."""
    return dict(variant(name).removed_keys)


def without_removed_keys(section: Mapping[str, Any]) -> dict[str, Any]:
    """A stored ``model:`` mapping without the keys its variant no longer has (unchanged when it names no
    registered variant), so that comparing it with a current section sees only real differences."""
    try:
        name = resolve_name(section.get("name", DEFAULT), section.get("nn_type"))
    except (AttributeError, TypeError, ValueError):
        return dict(section)
    removed = removed_keys(name)
    return {key: value for key, value in section.items() if key not in removed}


def build_model(name: str | None, cfg, nn_type: int | None = None) -> torch.nn.Module:
    """Build the selected variant from its config section ``cfg`` and the input sizes of the model-input
    contract (``pecan.data.schema.input_sizes``), the one place the sizes are read."""
    from pecan.data.schema import input_sizes

    entry = _BY_NAME[resolve_name(name, nn_type)]
    return importlib.import_module(entry.module).build(cfg, input_sizes())
