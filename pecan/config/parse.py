"""Reading config text: strict YAML (a key given twice in one mapping is an error naming it and both
lines) and coercing each value to its field's annotated type."""

from __future__ import annotations

import re
import typing
from typing import Any, Literal

import yaml

from pecan.runtime.errors import ConfigError


class StrictLoader(yaml.SafeLoader):
    """PyYAML's safe loader, except that a duplicate key is a ConfigError instead of a silent overwrite."""


def _strict_mapping(loader: StrictLoader, node: yaml.MappingNode, deep: bool = False) -> dict:
    # Only the keys written in this mapping count: a key that overrides one merged in by `<<: *anchor` is
    # what merging is for.
    first_line: dict[Any, int] = {}
    for key_node, _ in node.value:
        if key_node.tag == "tag:yaml.org,2002:merge":
            continue
        key = loader.construct_object(key_node, deep=deep)
        line = key_node.start_mark.line + 1
        if key in first_line:
            raise ConfigError(
                f"{loader.source}: key {key!r} appears twice in one mapping, at line "
                f"{first_line[key]} and line {line}; the second would silently replace the first"
            )
        first_line[key] = line
    loader.flatten_mapping(node)
    return loader.construct_mapping(node, deep=deep)


StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _strict_mapping)


def safe_load_strict(text: str, source: str) -> Any:
    """yaml.safe_load with duplicate keys refused; a syntax error names ``source``."""
    loader = StrictLoader(text)
    loader.source = source
    try:
        return loader.get_single_data()
    except yaml.YAMLError as err:
        raise ConfigError(f"{source}: not valid YAML ({err})") from err
    finally:
        loader.dispose()


def type_name(tp: Any) -> str:
    origin = typing.get_origin(tp)
    if origin is Literal:
        return " | ".join(repr(a) for a in typing.get_args(tp))
    if origin is typing.Union:
        return " or ".join(type_name(a) for a in typing.get_args(tp))
    if origin is list:
        return f"list of {type_name(typing.get_args(tp)[0])}"
    return getattr(tp, "__name__", str(tp))


YAML12_FLOAT = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?")


def coerce(value: Any, tp: Any, key: str, source: str) -> Any:
    """Check ``value`` against the annotation ``tp``; ints widen to floats, a lone string to a list."""
    origin = typing.get_origin(tp)
    bad = ConfigError(f"{source}: '{key}' must be {type_name(tp)}, got {value!r}")
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
                return coerce(value, arg, key, source)
            except ConfigError:
                pass
        raise bad
    if origin is list:
        if value is None:  # `train_csvs: null` means none
            return []
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list):
            raise bad
        return [coerce(v, typing.get_args(tp)[0], key, source) for v in value]
    if tp is bool:
        if not isinstance(value, bool):
            raise bad
        return value
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise bad
        return value
    if tp is float:
        if isinstance(value, str) and YAML12_FLOAT.fullmatch(value.strip()):
            value = float(value)  # PyYAML (YAML 1.1) reads 1e-3 as a string
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise bad
        return float(value)
    if tp is str:
        if not isinstance(value, (str, int, float)) or isinstance(value, bool):
            raise bad
        return str(value)
    raise bad
