"""The configuration reference: every option's key, type, default and documentation, rendered as the
README's table (``python -m pecan.config_docs --update-readme``; a test keeps the README current)."""
from __future__ import annotations

import dataclasses
import os
import typing
from pathlib import Path

from pecan.config import Config, _type_name


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
