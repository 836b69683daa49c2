"""Manifest CSVs, one row per complex with paths relative to the manifest: the converter's input and the
redocking's alike. Every cell is read as text; a missing column or a complex_id given twice is a
ValueError naming the file."""

from __future__ import annotations

from pathlib import Path

import pandas as pd


def read_manifest_frame(path: Path, required: tuple[str, ...], optional: tuple[str, ...]) -> pd.DataFrame:
    """The manifest's cells as text (nothing read as missing); a missing required column names the file."""
    frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    missing = [c for c in required if c not in frame.columns]
    if missing:
        raise ValueError(
            f"manifest {path}: missing column(s) {', '.join(missing)} "
            f"(required: {', '.join(required)}; optional: {', '.join(optional)})"
        )
    return frame


def check_unique_ids(frame: pd.DataFrame, path: Path) -> None:
    """A complex_id given twice is a ValueError naming the first repeated one."""
    duplicated = frame["complex_id"][frame["complex_id"].duplicated()]
    if len(duplicated):
        raise ValueError(f"manifest {path}: complex_id {duplicated.iloc[0]!r} appears more than once")
