"""Typed run configuration: YAML file, then ``--set section.key=value`` overrides, then env gates.

The sections' dataclasses are in pecan.config.sections; here they are assembled into ``Config`` (the model
section built the same way for every variant, from the registry) and loaded. Unknown keys, wrong types and
bad choices are errors naming the key and the file.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import os
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

import yaml

import model as registry
from pecan.config.checks import check_device, check_values
from pecan.config.parse import YAML12_FLOAT, safe_load_strict  # noqa: F401  (re-exported)
from pecan.config.parse import coerce as _coerce
from pecan.config.parse import type_name as _type_name  # noqa: F401  (pecan.config.docs renders types with it)
from pecan.config.sections import DataConfig, ModelChoice, SyntheticConfig, TraceConfig, TrainConfig
from pecan.runtime.errors import ConfigError  # noqa: F401  (re-exported: pecan.config.ConfigError)

log = logging.getLogger(__name__)
_VARIANT_SECTIONS: dict[str, type] = {}


def model_section_class(variant: str) -> type:
    """The dataclass of the ``model:`` section for a registry variant, the same way for every variant:
    ModelChoice's name and nn_type, then the fields (and checks) of the config class the registry names
    (importing only that variant's config module)."""
    if variant not in _VARIANT_SECTIONS:
        own = registry.config_class(variant)
        section = type(
            f"{own.__name__}Section",
            (own, ModelChoice),
            {
                "__doc__": f"The model section of the {variant} variant: name, nn_type, then "
                f":class:`{own.__name__}`'s keys.",
                "__module__": __name__,
            },
        )
        _VARIANT_SECTIONS[variant] = dataclass(section)
    return _VARIANT_SECTIONS[variant]


ModelConfig = model_section_class(registry.DEFAULT)
"""The default variant's (the EGNN's) model section."""


@dataclass
class Config:
    """The whole run configuration, one section per component."""

    data: DataConfig = field(default_factory=DataConfig)
    model: ModelConfig = field(default_factory=ModelConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    trace: TraceConfig = field(default_factory=TraceConfig)
    synthetic: SyntheticConfig = field(default_factory=SyntheticConfig)

    def to_dict(self) -> dict[str, Any]:
        """Plain nested dict (YAML/JSON serialisable)."""
        return dataclasses.asdict(self)

    def digest(self) -> str:
        """Short stable hash of the configuration, recorded in checkpoints."""
        text = json.dumps(self.to_dict(), sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:16]


# ---------------------------------------------------------------------------- parsing


def _section_types(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _build_section(cls: type, raw: Any, section: str, source: str) -> Any:
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ConfigError(f"{source}: section '{section}' must be a mapping, got {type(raw).__name__}")
    hints = _section_types(cls)
    names = {f.name for f in dataclasses.fields(cls)}
    for key in raw:
        if key not in names:
            raise ConfigError(f"{source}: unknown key '{section}.{key}' (valid: {', '.join(sorted(names))})")
    values = {k: _coerce(v, hints[k], f"{section}.{k}", source) for k, v in raw.items()}
    return cls(**values)


def build_model_section(raw: Any, source: str) -> Any:
    """The ``model:`` section (of a YAML file or a checkpoint): resolve the variant first, then accept only
    keys of that variant."""
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ConfigError(f"{source}: section 'model' must be a mapping, got {type(raw).__name__}")
    name = _coerce(raw.get("name", ModelConfig.name), str, "model.name", source)
    nn_type = _coerce(raw.get("nn_type"), Optional[int], "model.nn_type", source)
    try:
        variant = registry.resolve_name(name, nn_type)
    except ValueError as err:
        raise ConfigError(f"{source}: 'model.name'/'model.nn_type': {err}") from err
    removed = registry.removed_keys(variant)
    for key in [key for key in raw if key in removed]:
        log.warning(
            "%s: 'model.%s' is no longer a key of %s (%s); its value %r is ignored",
            source,
            key,
            variant,
            removed[key],
            raw[key],
        )
    raw = {key: value for key, value in raw.items() if key not in removed}
    cls = model_section_class(variant)
    names = {f.name for f in dataclasses.fields(cls)}
    for key in raw:
        if key in names:
            continue
        owners = [
            v for v in registry.available() if key in {f.name for f in dataclasses.fields(model_section_class(v))}
        ]
        if owners:
            raise ConfigError(
                f"{source}: 'model.{key}' is a key of the {' and '.join(owners)} variant, not of "
                f"{variant} (the selected model); {variant} keys: {', '.join(sorted(names))}"
            )
    # The resolved name is kept, so a legacy nn_type config reads (and is saved) with its variant's name.
    return _build_section(cls, {**raw, "name": variant}, "model", source)


def from_dict(raw: Any, source: str = "<config>") -> Config:
    """Build a validated Config from a nested mapping; ``source`` names the file in errors."""
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ConfigError(f"{source}: top level must be a mapping of sections")
    sections = {f.name: f for f in dataclasses.fields(Config)}
    for key in raw:
        if key not in sections:
            raise ConfigError(f"{source}: unknown section '{key}' (valid: {', '.join(sections)})")
    hints = typing.get_type_hints(Config)
    built = {name: _build_section(hints[name], raw.get(name), name, source) for name in sections if name != "model"}
    built["model"] = build_model_section(raw.get("model"), source)
    config = Config(**built)
    validate(config, source)
    return config


def parse_override(text: str) -> tuple[list[str], Any]:
    """Split ``a.b=value`` into (["a", "b"], YAML-parsed value)."""
    if "=" not in text:
        raise ConfigError(f"--set '{text}': expected section.key=value")
    key, value = text.split("=", 1)
    parts = key.strip().split(".")
    if len(parts) != 2 or not all(parts):
        raise ConfigError(f"--set '{text}': key must be section.key, e.g. train.epochs=1")
    try:
        parsed = yaml.safe_load(value) if value.strip() else ""
    except yaml.YAMLError as err:
        raise ConfigError(f"--set '{text}': value is not valid YAML ({err})") from err
    return parts, parsed


def load(path: str | os.PathLike | None, overrides: list[str] | tuple[str, ...] = ()) -> Config:
    """Read a YAML config, apply ``--set`` overrides, validate, then apply env gates."""
    raw: dict[str, Any] = {}
    source = str(path) if path else "<defaults>"
    if path:
        try:
            text = Path(path).read_text()
        except OSError as err:
            raise ConfigError(f"cannot read config file {path}: {err.strerror or err}") from err
        raw = safe_load_strict(text, str(path)) or {}
        if not isinstance(raw, dict):
            raise ConfigError(f"{path}: top level must be a mapping of sections")
    return load_mapping(raw, overrides, source)


def load_mapping(raw: dict[str, Any], overrides: list[str] | tuple[str, ...] = (), source: str = "<config>") -> Config:
    """A config from a nested mapping (a YAML file's, or one built from a checkpoint): apply ``--set``
    overrides, validate, then apply env gates."""
    for text in overrides:
        (section, key), value = parse_override(text)
        if raw.get(section) is None:  # absent, or an empty `section:` line
            raw[section] = {}
        section_map = raw[section]
        if not isinstance(section_map, dict):
            raise ConfigError(f"{source}: section '{section}' must be a mapping")
        section_map[key] = value
    config = from_dict(raw, source if not overrides else f"{source} (with --set overrides)")
    config = apply_env(config)
    check_device_available(config, source)
    return config


# ---------------------------------------------------------------------------- environment

# Every PECAN_* variable the run reads, read here and nowhere else: name -> (config key, kind).
# "path": fills the key when the config leaves it empty; "flag": 0/1 (true/false, yes/no, on/off) overrides it.
ENV_VARS = {
    "PECAN_CACHE_DIR": ("data.cache_dir", "path"),
    "PECAN_INDEX_CSV_DIR": ("data.index_dir", "path"),
    "PECAN_DECODE_CACHE": ("data.decode_cache", "flag"),
    "PECAN_TORCH_COMPILE": ("train.compile", "flag"),
}
_TRUE, _FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off")


def env_flag(name: str, environ: Optional[dict[str, str]] = None) -> Optional[bool]:
    """Read a 0/1 environment gate; None when unset, an error naming the variable when malformed."""
    env = os.environ if environ is None else environ
    raw = env.get(name)
    if raw is None or not raw.strip():
        return None
    value = raw.strip().lower()
    if value in _TRUE or value in _FALSE:
        return value in _TRUE
    raise ConfigError(f"environment variable {name} must be 0 or 1 (or true/false, yes/no, on/off), got {raw!r}")


def env_value(name: str, environ: Optional[dict[str, str]] = None) -> Any:
    """One ENV_VARS variable parsed by its kind; None when unset or empty."""
    if ENV_VARS[name][1] == "flag":
        return env_flag(name, environ)
    raw = (os.environ if environ is None else environ).get(name, "").strip()
    return raw or None


def apply_env(config: Config, environ: Optional[dict[str, str]] = None) -> Config:
    """Fold the PECAN_* variables (ENV_VARS) into the config: paths fill empty keys, flags override."""
    for name, (key, kind) in ENV_VARS.items():
        value = env_value(name, environ)
        if value is None:
            continue
        section, attr = key.split(".")
        target = getattr(config, section)
        if kind == "flag" or not getattr(target, attr):
            setattr(target, attr, value)
    return config


def validate(config: Config, source: str = "<config>") -> None:
    """Value checks that types alone cannot express; each error names the key (see pecan.config.checks)."""
    check_values(config, source)


def check_device_available(config: Config, source: str = "<config>") -> None:
    """A CUDA device named in train.device must exist in this build and on this machine."""
    check_device(config, source)


def trace_dir(config: Config) -> Path:
    """trace.dir, inside train.out_dir when relative."""
    directory = Path(config.trace.dir)
    return directory if directory.is_absolute() else Path(config.train.out_dir) / directory


def save(config: Config, path: str | os.PathLike) -> None:
    """Write the resolved config as YAML, atomically (temp file in the destination, then rename)."""
    from pecan.runtime.fileio import write_text

    write_text(path, yaml.safe_dump(config.to_dict(), sort_keys=False))
