"""A run directory's records as the readers (compare, plot, report) take them: records written by older
versions or cut short, and a config.yaml a person or another tool edited, read without a traceback.

- A numeric field (a figure or a count) holding a number as text ("0.71") is read as that number; one holding
  anything else ("n/a", a list) is left out of that record and named once per file on stderr. A field that
  is absent (records older than ``wall_s`` or ``world_size``, the fit_* fields of an epoch without a fit
  check) stays absent: each reader shows "n/a" or skips it. A record without an epoch number is numbered by
  its place in the file.
- config.yaml is read with YAML tags (``!!python/object:...``, ``!custom``) taken as their plain content: a
  reader never constructs an object, and a tagged value still compares as its content.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Any

import yaml

from pecan import report

NUMBER_SUFFIXES = ("_s", "_share", "_per_s", "_per_sample", "_mean", "_max", "_mb", "_ratio")
# The numeric fields by name are the epoch record's own list (pecan/report.py), not a copy of it.
NUMBER_FIELDS = frozenset(report.NUMBER_FIELDS)


def is_number_field(key: str) -> bool:
    """Whether ``key`` holds a number in an epoch record."""
    return key in NUMBER_FIELDS or key.endswith(NUMBER_SUFFIXES)


def _number(value: Any) -> float | int | None:
    """``value`` as a number (int and float as they are, numeric text parsed), else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return value
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return None
    return None


def clean_records(records: list[dict], path: Path | str) -> list[dict]:
    """The records with every numeric field a number or absent; what was left out is named on stderr."""
    dropped: dict[str, list] = {}
    for place, record in enumerate(records, 1):
        for key, value in list(record.items()):
            if not is_number_field(key) or value is None:
                continue
            number = _number(value)
            if number is None:
                dropped.setdefault(key, []).append(value)
                del record[key]
            else:
                record[key] = number
        if not isinstance(record.get("epoch"), (int, float)) or not math.isfinite(record["epoch"]):
            record["epoch"] = place
        record["epoch"] = int(record["epoch"])
    for key, values in dropped.items():
        print(
            f"note: {path}: {key} is not a number in {len(values)} record(s) (first: {values[0]!r}); left out",
            file=sys.stderr,
        )
    return records


def read_run_records(path: Path, need_one: bool = True) -> list[dict]:
    """The epoch records of ``path`` (epochs.jsonl), cleaned; ``need_one``: none is a DataError naming it."""
    records = report.read_epoch_records(path) if need_one else report.read_records(path)
    return clean_records(records, path)


class _PlainLoader(yaml.SafeLoader):
    """YAML's safe loader that reads a tagged node as its plain content."""


def _plain(loader: yaml.SafeLoader, suffix: str, node: yaml.Node) -> Any:
    if isinstance(node, yaml.MappingNode):
        return loader.construct_mapping(node, deep=True)
    if isinstance(node, yaml.SequenceNode):
        return loader.construct_sequence(node, deep=True)
    return loader.construct_scalar(node)


_PlainLoader.add_multi_constructor("", _plain)


def read_config(run_dir: Path) -> dict:
    """A run's config.yaml as a mapping ({} when absent or empty); YAML that cannot be parsed at all is a
    DataError naming the file."""
    from pecan.runtime.errors import DataError

    path = run_dir / "config.yaml"
    if not path.exists():
        return {}
    try:
        config = yaml.load(path.read_text(encoding="utf-8", errors="replace"), Loader=_PlainLoader)
    except yaml.YAMLError as err:
        raise DataError(f"{path}: not readable as YAML ({' '.join(str(err).split())})") from None
    if config is None:
        return {}
    if not isinstance(config, dict):
        raise DataError(f"{path}: not a mapping of settings (a {type(config).__name__})")
    return config
