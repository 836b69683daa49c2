"""Config fields of the model variants: a default plus the documentation docs/configuration.md shows, and
a variant's settings read from a config section. Kept apart from ``pecan.config`` so a variant's settings
never import the application."""

from __future__ import annotations

import dataclasses
from dataclasses import field
from typing import Any, TypeVar

Settings = TypeVar("Settings")


def setting(doc: str, default: Any) -> Any:
    """A dataclass field with ``default`` and its documentation in ``metadata["doc"]``."""
    return field(default=default, metadata={"doc": doc})


def settings_from(config_class: type[Settings], cfg: Any) -> Settings:
    """A ``config_class`` holding ``cfg``'s values of its keys (``cfg``: the app's ``model:`` section, a
    ``config_class`` itself, or any object with same-named attributes); a key ``cfg`` lacks keeps its default."""
    names = [f.name for f in dataclasses.fields(config_class)]
    return config_class(**{name: getattr(cfg, name) for name in names if hasattr(cfg, name)})
