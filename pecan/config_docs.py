"""The configuration reference: every option's key, type, default and documentation, rendered as the
README's table (``python -m pecan.config_docs --update-readme``; a test keeps the README current)."""
from __future__ import annotations

import dataclasses
import os
import typing
from pathlib import Path

from pecan.config import Config, _type_name


def reference_rows() -> list[tuple[str, str, str, str, str]]:
    """(key, variant or "", type, default, documentation) of every option; a variant's own keys follow the
    model section's (this imports every variant's module)."""
    rows = []
    hints = typing.get_type_hints(Config)
    for section in dataclasses.fields(Config):
        rows += _rows(hints[section.name], section.name)
        if section.name == "model":
            for variant in registry_names():
                cls = _variant_class(variant)
                if cls is not None:
                    rows += _rows(cls, "model", variant)
    return rows


def _rows(cls: type, section: str, variant: str = "") -> list[tuple[str, str, str, str, str]]:
    hints = typing.get_type_hints(cls)
    rows = []
    for f in dataclasses.fields(cls):
        default = f.default if f.default is not dataclasses.MISSING else f.default_factory()
        rows.append((f"{section}.{f.name}", variant, _type_name(hints[f.name]), repr(default),
                     f.metadata.get("doc", "")))
    return rows


def registry_names() -> list[str]:
    """Names of the registered model variants."""
    import model as registry

    return registry.available()


def _variant_class(variant: str):
    import model as registry

    return registry.config_class(variant)


def describe() -> str:
    """Markdown reference of every option (used to keep the README's table current)."""
    lines = ["| key | type | default | meaning |", "|---|---|---|---|"]
    for key, variant, kind, default, doc in reference_rows():
        name = f"`{key}` ({variant})" if variant else f"`{key}`"
        lines.append(f"| {name} | {kind} | `{default}` | {doc} |")
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


def main() -> None:
    """``python -m pecan.config_docs [--update-readme]``: print the table, or refresh the README's copy."""
    import sys

    if "--update-readme" in sys.argv:
        print("updated" if update_readme(Path(__file__).resolve().parents[1] / "README.md") else "current")
    else:
        print(describe())


if __name__ == "__main__":
    main()
