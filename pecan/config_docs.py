"""The configuration reference: every option's key, type, default and documentation, rendered as the
table of docs/configuration.md (``python -m pecan.config_docs --update-docs``; a test keeps the page current)."""
from __future__ import annotations

import dataclasses
import os
import typing
from pathlib import Path

from pecan.config import Config, _type_name
from pecan.fileio import write_text


def describe() -> str:
    """Markdown reference of every option (the table of docs/configuration.md)."""
    lines = ["| key | type | default | meaning |", "|---|---|---|---|"]
    hints = typing.get_type_hints(Config)
    for section in dataclasses.fields(Config):
        cls = hints[section.name]
        section_hints = typing.get_type_hints(cls)
        for f in dataclasses.fields(cls):
            default = f.default if f.default is not dataclasses.MISSING else f.default_factory()
            lines.append(f"| `{section.name}.{f.name}` | {_type_name(section_hints[f.name])} | "
                         f"`{default!r}` | {f.metadata.get('doc', '')} |")
        if section.name == "model":
            lines += _variant_rows()
    return "\n".join(lines)


def _variant_rows() -> list[str]:
    """Reference rows of the keys each non-default model variant adds, from the config class the registry
    names (imports every variant's module); the default variant's keys are the model section's own rows."""
    import model as registry

    rows = []
    for variant in registry.available():
        if variant == registry.DEFAULT:
            continue
        cls = registry.config_class(variant)
        hints = typing.get_type_hints(cls)
        for f in dataclasses.fields(cls):
            rows.append(f"| `model.{f.name}` ({variant}) | {_type_name(hints[f.name])} | `{f.default!r}` | "
                        f"{f.metadata.get('doc', '')} |")
    return rows


MARKERS = ("<!-- config-reference:start -->", "<!-- config-reference:end -->")
PAGE = Path(__file__).resolve().parents[1] / "docs" / "configuration.md"
# --update-readme is the option's earlier name (the table lived in README.md); it now updates the same page.
UPDATE_OPTIONS = ("--update-docs", "--update-readme")


def update_page(path: str | os.PathLike = PAGE) -> bool:
    """Rewrite the config table between the page's markers; returns whether it changed."""
    path = Path(path)
    text = path.read_text()
    start, end = (text.index(marker) for marker in MARKERS)
    updated = text[:start + len(MARKERS[0])] + "\n" + describe() + "\n" + text[end:]
    if updated != text:
        write_text(path, updated)
    return updated != text


def main() -> None:
    """``python -m pecan.config_docs [--update-docs]``: print the table, or refresh docs/configuration.md."""
    import sys

    if any(option in sys.argv for option in UPDATE_OPTIONS):
        print("updated" if update_page() else "current")
    else:
        print(describe())


if __name__ == "__main__":
    main()
