"""The configuration reference: every option's key, type, default and documentation, rendered as the
table of docs/configuration.md (``python -m pecan.config.docs --update-docs``; a test keeps the page current)."""

from __future__ import annotations

import dataclasses
import os
import typing
from pathlib import Path

from pecan.config import Config, _type_name
from pecan.runtime.fileio import write_text


def reference_rows() -> list[tuple[str, str, str, str, str]]:
    """(key, variant or "", type, default, documentation) of every option; a variant's own keys follow the
    model section's (this imports every variant's module)."""
    rows = []
    hints = typing.get_type_hints(Config)
    for section in dataclasses.fields(Config):
        rows += _rows(hints[section.name], section.name)
        if section.name == "model":
            for variant in registry_names():  # the default variant's keys are the section's own rows
                rows += _rows(_variant_class(variant), "model", variant)
    return rows


def _rows(cls: type, section: str, variant: str = "") -> list[tuple[str, str, str, str, str]]:
    hints = typing.get_type_hints(cls)
    rows = []
    for f in dataclasses.fields(cls):
        default = f.default if f.default is not dataclasses.MISSING else f.default_factory()
        rows.append(
            (f"{section}.{f.name}", variant, _type_name(hints[f.name]), repr(default), f.metadata.get("doc", ""))
        )
    return rows


def registry_names() -> list[str]:
    """Names of the registered model variants."""
    import model as registry

    return [name for name in registry.available() if name != registry.DEFAULT]


def _variant_class(variant: str):
    import model as registry

    return registry.config_class(variant)


def describe() -> str:
    """Markdown reference of every option (the table of docs/configuration.md)."""
    lines = ["| key | type | default | meaning |", "|---|---|---|---|"]
    for key, variant, kind, default, doc in reference_rows():
        name = f"`{key}` ({variant})" if variant else f"`{key}`"
        lines.append(f"| {name} | {kind} | `{default}` | {doc} |")
    return "\n".join(lines)


MARKERS = ("<!-- config-reference:start -->", "<!-- config-reference:end -->")
PAGE = Path(__file__).resolve().parents[2] / "docs" / "configuration.md"
# --update-readme is the option's earlier name (the table lived in README.md); it now updates the same page.
UPDATE_OPTIONS = ("--update-docs", "--update-readme")


def update_page(path: str | os.PathLike = PAGE) -> bool:
    """Rewrite the config table between the page's markers; returns whether it changed."""
    path = Path(path)
    text = path.read_text()
    start, end = (text.index(marker) for marker in MARKERS)
    updated = text[: start + len(MARKERS[0])] + "\n" + describe() + "\n" + text[end:]
    if updated != text:
        write_text(path, updated)
    return updated != text


def main() -> None:
    """``python -m pecan.config.docs [--update-docs]``: print the table, or refresh docs/configuration.md."""
    import sys

    if any(option in sys.argv for option in UPDATE_OPTIONS):
        print("updated" if update_page() else "current")
    else:
        print(describe())


if __name__ == "__main__":
    main()
