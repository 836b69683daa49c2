"""Typed run configuration: YAML file, then ``--set section.key=value`` overrides, then env gates.

Every field carries its documentation in ``metadata["doc"]``; ``describe()`` renders the reference
the README quotes. Unknown keys, wrong types and bad choices are errors naming the key and the file.
"""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Optional

import yaml


class ConfigError(ValueError):
    """A configuration value is missing, unknown or of the wrong type."""


def _doc(text: str, default: Any = dataclasses.MISSING, factory: Any = dataclasses.MISSING) -> Any:
    if factory is not dataclasses.MISSING:
        return field(default_factory=factory, metadata={"doc": text})
    return field(default=default, metadata={"doc": text})


IO_MODES = ("reopen", "handle_cache", "hoist", "decode_cache", "packed")


@dataclass
class DataConfig:
    """Where the shards are, how samples become graphs, and how they are loaded."""

    data_dir: str = _doc("Directory holding the shards; relative shard paths in index CSVs resolve here.", "")
    train_csvs: list[str] = _doc("Index CSVs of the training split (relative to data_dir or absolute).", factory=list)
    train_fns: list[str] = _doc(
        "Training shard files (globs allowed); the index is derived from the shards when no CSV is given "
        "or the CSV cannot be read.", factory=list)
    val_csvs: list[str] = _doc("Index CSVs of the validation split.", factory=list)
    val_fns: list[str] = _doc("Validation shard files (globs allowed).", factory=list)
    val_fraction: float = _doc(
        "Fraction of complexes held out for validation when no val_csvs/val_fns are given (split by complex).", 0.2)
    split_seed: int = _doc("Seed of the complex-level train/validation split.", 0)
    pose_group: str = _doc("Group path of docked poses inside each complex.", "pybel/processed/docking")
    crystal_group: str = _doc(
        "Group path of the crystal pose inside each complex; the sibling name 'crystal' is accepted too.",
        "pybel/processed/pdbbind")
    use_crystal: bool = _doc("Include crystal poses (label 1, rmsd 0) as samples when the shards have them.", True)
    rmsd_threshold: float = _doc("A pose with RMSD below this (Angstrom) is near-native (label 1).", 2.0)
    pocket_radius: float = _doc("Keep protein atoms within this distance (Angstrom) of any ligand atom.", 6.0)
    edge_cutoff: float = _doc("Connect atoms closer than this (Angstrom).", 4.5)
    batch_size: int = _doc("Graphs per batch per rank.", 8)
    num_workers: int = _doc(
        "DataLoader workers per rank; -1 (auto): 0 for io_mode packed (its in-process gather is cheaper than "
        "a worker hand-over), else physical cores per rank minus one.", -1)
    io_mode: Literal["reopen", "handle_cache", "hoist", "decode_cache", "packed"] = _doc(
        "Data path level: reopen (naive baseline), handle_cache, hoist, decode_cache, packed "
        "(memory-mapped flat copy, zero HDF5 calls per sample).", "packed")
    cache_dir: str = _doc(
        "Where packed shards are stored; empty: beside the shards, else PECAN_CACHE_DIR, else the temp dir.", "")
    shuffle: Literal["global", "block"] = _doc(
        "Training order: global uniform shuffle, or block (shuffled shards, shuffled within each shard).", "global")
    augment: bool = _doc(
        "Apply a random rigid rotation per sample (forces the decode cache off).", False)
    on_bad_sample: Literal["error", "skip"] = _doc(
        "On a broken sample: stop with an error naming shard and pose, or count, log and skip it.", "error")
    index_prefix: str = _doc("Name prefix of a derived index CSV (<prefix>_all.csv).", "pecan")


@dataclass
class ModelConfig:
    """Which model variant and its size."""

    name: str = _doc("Model variant from the registry (egnn).", "egnn")
    nn_type: Optional[int] = _doc("Legacy numeric model id (3 = egnn); overrides name when set.", None)
    hidden: int = _doc("Hidden width of node embeddings and messages.", 64)
    layers: int = _doc("Number of message-passing layers.", 4)
    attention: bool = _doc("Gate each message with a learned soft edge weight.", True)
    update_coords: bool = _doc("Let layers update coordinates equivariantly.", False)
    use_pose_features: bool = _doc("Feed the 5 interaction counts to the classifier head.", True)
    dropout: float = _doc("Dropout in each layer's node update and in the classifier head.", 0.0)
    rbf: int = _doc("Radial basis functions expanding each edge length.", 16)
    cutoff: float = _doc("Largest distance (Angstrom) the radial basis covers; match data.edge_cutoff.", 4.5)


@dataclass
class TrainConfig:
    """Optimisation, devices and where results go."""

    epochs: int = _doc("Training epochs.", 10)
    lr: float = _doc("Peak AdamW learning rate (cosine decay to 5% of it).", 1e-3)
    weight_decay: float = _doc("AdamW weight decay.", 1e-4)
    warmup_steps: int = _doc("Linear learning-rate warm-up steps.", 0)
    grad_clip: float = _doc("Clip the global gradient norm to this value; 0 disables.", 1.0)
    seed: int = _doc("Seed for model init, sampling order and dropout.", 0)
    device: str = _doc("auto (cuda:local_rank when available, else cpu), cpu, or cuda.", "auto")
    out_dir: str = _doc("Run directory: config.yaml, epochs.jsonl, checkpoints, traces.", "runs/default")
    amp: Literal["off", "bf16"] = _doc("Mixed precision: bf16 autocast (no GradScaler needed) or off.", "off")
    compile: bool = _doc("torch.compile the model (dynamic shapes); env PECAN_TORCH_COMPILE=0|1 overrides.", False)
    resume: str = _doc("auto: continue from out_dir's last checkpoint if present; never; or a checkpoint path.",
                       "auto")
    max_steps_per_epoch: int = _doc("Stop an epoch after this many steps; 0 means the full epoch.", 0)
    deterministic: bool = _doc("Use deterministic algorithms (slower; for exact reproduction).", False)
    progress: bool = _doc("Show progress bars on rank 0.", True)


@dataclass
class TraceConfig:
    """dftracer annotations."""

    enabled: bool = _doc("Write dftracer traces (needs the native dftracer package: pip install .[trace-native]).",
                         False)
    dir: str = _doc("Trace directory; relative paths are inside train.out_dir.", "traces")


@dataclass
class Config:
    """The whole run configuration, one section per component."""

    data: DataConfig = field(default_factory=DataConfig)
    model: ModelConfig = field(default_factory=ModelConfig)
    train: TrainConfig = field(default_factory=TrainConfig)
    trace: TraceConfig = field(default_factory=TraceConfig)

    def to_dict(self) -> dict[str, Any]:
        """Plain nested dict (YAML/JSON serialisable)."""
        return dataclasses.asdict(self)

    def digest(self) -> str:
        """Short stable hash of the configuration, recorded in checkpoints."""
        text = json.dumps(self.to_dict(), sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:16]


# ---------------------------------------------------------------------------- parsing

def _type_name(tp: Any) -> str:
    origin = typing.get_origin(tp)
    if origin is Literal:
        return " | ".join(repr(a) for a in typing.get_args(tp))
    if origin is typing.Union:
        return " or ".join(_type_name(a) for a in typing.get_args(tp))
    if origin is list:
        return f"list of {_type_name(typing.get_args(tp)[0])}"
    return getattr(tp, "__name__", str(tp))


def _coerce(value: Any, tp: Any, key: str, source: str) -> Any:
    """Check ``value`` against the annotation ``tp``; ints widen to floats, a lone string to a list."""
    origin = typing.get_origin(tp)
    bad = ConfigError(f"{source}: '{key}' must be {_type_name(tp)}, got {value!r}")
    if origin is Literal:
        if value not in typing.get_args(tp):
            raise bad
        return value
    if origin is typing.Union:
        args = typing.get_args(tp)
        if value is None and type(None) in args:
            return None
        for arg in args:
            if arg is type(None):
                continue
            try:
                return _coerce(value, arg, key, source)
            except ConfigError:
                pass
        raise bad
    if origin is list:
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list):
            raise bad
        return [_coerce(v, typing.get_args(tp)[0], key, source) for v in value]
    if tp is bool:
        if not isinstance(value, bool):
            raise bad
        return value
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise bad
        return value
    if tp is float:
        if isinstance(value, str):
            # YAML 1.1 reads an exponent without a dot (lr: 1e-3) as a string.
            try:
                return float(value)
            except ValueError:
                raise bad from None
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise bad
        return float(value)
    if tp is str:
        if not isinstance(value, (str, int, float)) or isinstance(value, bool):
            raise bad
        return str(value)
    raise bad


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
    built = {name: _build_section(hints[name], raw.get(name), name, source) for name in sections}
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
        try:
            raw = yaml.safe_load(text) or {}
        except yaml.YAMLError as err:
            raise ConfigError(f"{path}: not valid YAML ({err})") from err
        if not isinstance(raw, dict):
            raise ConfigError(f"{path}: top level must be a mapping of sections")
    for text in overrides:
        (section, key), value = parse_override(text)
        section_map = raw.setdefault(section, {})
        if not isinstance(section_map, dict):
            raise ConfigError(f"{source}: section '{section}' must be a mapping")
        section_map[key] = value
    config = from_dict(raw, source if not overrides else f"{source} (with --set overrides)")
    return apply_env(config)


def env_flag(name: str, environ: Optional[dict[str, str]] = None) -> Optional[bool]:
    """Read a 0/1 environment gate; None when unset, an error naming the variable when malformed."""
    env = os.environ if environ is None else environ
    value = env.get(name)
    if value is None or value == "":
        return None
    if value.strip().lower() in ("1", "true", "yes", "on"):
        return True
    if value.strip().lower() in ("0", "false", "no", "off"):
        return False
    raise ConfigError(f"environment variable {name} must be 0 or 1, got {value!r}")


def apply_env(config: Config, environ: Optional[dict[str, str]] = None) -> Config:
    """Apply environment gates that override the file (PECAN_TORCH_COMPILE)."""
    compile_flag = env_flag("PECAN_TORCH_COMPILE", environ)
    if compile_flag is not None:
        config.train.compile = compile_flag
    return config


def validate(config: Config, source: str = "<config>") -> None:
    """Range checks that types alone cannot express."""
    checks = [
        (0.0 <= config.data.val_fraction < 1.0, "data.val_fraction", "must be in [0, 1)"),
        (config.data.rmsd_threshold > 0, "data.rmsd_threshold", "must be > 0"),
        (config.data.pocket_radius > 0, "data.pocket_radius", "must be > 0"),
        (config.data.edge_cutoff > 0, "data.edge_cutoff", "must be > 0"),
        (config.data.batch_size >= 1, "data.batch_size", "must be >= 1"),
        (config.data.num_workers >= -1, "data.num_workers", "must be >= -1"),
        (config.model.hidden >= 1, "model.hidden", "must be >= 1"),
        (config.model.layers >= 1, "model.layers", "must be >= 1"),
        (0.0 <= config.model.dropout < 1.0, "model.dropout", "must be in [0, 1)"),
        (config.train.epochs >= 1, "train.epochs", "must be >= 1"),
        (config.train.lr > 0, "train.lr", "must be > 0"),
        (config.train.grad_clip >= 0, "train.grad_clip", "must be >= 0"),
        (config.train.max_steps_per_epoch >= 0, "train.max_steps_per_epoch", "must be >= 0"),
        (bool(config.train.out_dir), "train.out_dir", "is required"),
    ]
    for ok, key, message in checks:
        if not ok:
            raise ConfigError(f"{source}: '{key}' {message}")
    has_data = config.data.train_csvs or config.data.train_fns or config.data.data_dir
    if not has_data:
        raise ConfigError(f"{source}: 'data.train_csvs', 'data.train_fns' or 'data.data_dir' is required")


def trace_dir(config: Config) -> Path:
    """trace.dir, inside train.out_dir when relative."""
    directory = Path(config.trace.dir)
    return directory if directory.is_absolute() else Path(config.train.out_dir) / directory


def save(config: Config, path: str | os.PathLike) -> None:
    """Write the resolved config as YAML, atomically (temp file in the destination, then rename)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    tmp.write_text(yaml.safe_dump(config.to_dict(), sort_keys=False))
    os.replace(tmp, path)


def describe() -> str:
    """Markdown reference of every option (used to keep the README's table current)."""
    lines = ["| key | type | default | meaning |", "|---|---|---|---|"]
    hints = typing.get_type_hints(Config)
    for section in dataclasses.fields(Config):
        cls = hints[section.name]
        section_hints = typing.get_type_hints(cls)
        for f in dataclasses.fields(cls):
            default = f.default if f.default is not dataclasses.MISSING else f.default_factory()
            lines.append(f"| `{section.name}.{f.name}` | {_type_name(section_hints[f.name])} | "
                         f"`{default!r}` | {f.metadata.get('doc', '')} |")
    return "\n".join(lines)


README_MARKERS = ("<!-- config-reference:start -->", "<!-- config-reference:end -->")


def update_readme(path: str | os.PathLike) -> bool:
    """Rewrite the config table between the README's markers; returns whether it changed."""
    path = Path(path)
    text = path.read_text()
    start, end = (text.index(marker) for marker in README_MARKERS)
    updated = text[:start + len(README_MARKERS[0])] + "\n" + describe() + "\n" + text[end:]
    if updated != text:
        path.write_text(updated)
    return updated != text


if __name__ == "__main__":
    import sys

    if "--update-readme" in sys.argv:
        print("updated" if update_readme(Path(__file__).resolve().parents[1] / "README.md") else "current")
    else:
        print(describe())
