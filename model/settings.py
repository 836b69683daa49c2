"""Config fields of the model variants: a default plus the documentation docs/configuration.md shows.
Kept apart from ``pecan.config`` so a variant's settings never import the application."""

from __future__ import annotations

from dataclasses import field
from typing import Any


def setting(doc: str, default: Any) -> Any:
    """A dataclass field with ``default`` and its documentation in ``metadata["doc"]``."""
    return field(default=default, metadata={"doc": doc})
