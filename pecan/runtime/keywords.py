"""Keyword arguments taken from same-named attributes: the one way a config section or parsed command-line
arguments hand their values to a constructor (index settings, pack parameters, dock options, ...).

A leaf: imports nothing of PECAN's.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Iterable, Union


def same_named(source: Any, names: Union[Iterable[str], type], **changes: Any) -> dict[str, Any]:
    """``{name: source.name}`` for each of ``names`` (a dataclass: its fields), then ``changes`` on top.

    A name that ``source`` lacks and ``changes`` does not give is an AttributeError: a renamed key must not
    fall back to a default unnoticed."""
    if isinstance(names, type) and dataclasses.is_dataclass(names):
        names = [f.name for f in dataclasses.fields(names)]
    return {**{name: getattr(source, name) for name in names if name not in changes}, **changes}
