"""Manifest CSVs, one row per complex with paths relative to the manifest: the converter's input and the
redocking's alike. Every cell is read as text; a missing column or a complex_id given twice is a
ValueError naming the file."""

from __future__ import annotations

from pathlib import Path

import pandas as pd


def read_manifest_frame(path: Path, required: tuple[str, ...], optional: tuple[str, ...]) -> pd.DataFrame:
    """The manifest's cells as text (nothing read as missing); a missing required column, a column named
    twice in the header (pandas would rename the second) or a file that is not a CSV names the file."""
    try:
        frame = pd.read_csv(path, dtype=str, keep_default_na=False)
        header = pd.read_csv(path, header=None, nrows=1, dtype=str, keep_default_na=False).iloc[0].tolist()
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as err:
        raise ValueError(f"manifest {path} is not a valid CSV: {err}") from None
    names = [name.strip() for name in header]
    repeated = next((name for name in names if names.count(name) > 1), None)
    if repeated is not None:
        raise ValueError(
            f"manifest {path}, line 1: column {repeated!r} appears {names.count(repeated)} times in the "
            "header; keep one"
        )
    missing = [c for c in required if c not in frame.columns]
    if missing:
        raise ValueError(
            f"manifest {path}: missing column(s) {', '.join(missing)} "
            f"(required: {', '.join(required)}; optional: {', '.join(optional)})"
        )
    return frame


def check_unique_ids(frame: pd.DataFrame, path: Path) -> None:
    """A complex_id given twice is a ValueError naming the first repeated one; so is one that cannot name a
    file or an HDF5 group (a ``/`` or ``\\`` in it, ``.`` or ``..``), naming its line, before any work (such an
    id used to fail only when the index was built, after every shard was written)."""
    ids = frame["complex_id"].astype(str).str.strip()
    unnameable = ids.str.contains(r"[/\\]", regex=True) | ids.isin([".", ".."])
    if unnameable.any():
        row = int(unnameable.to_numpy().argmax())
        raise ValueError(
            f"manifest {path}, line {row + 2}: complex_id {ids.iloc[row]!r} cannot name a file or a shard group "
            "(no '/', '\\', '.' or '..'); rename it"
        )
    duplicated = frame["complex_id"][frame["complex_id"].duplicated()]
    if len(duplicated):
        raise ValueError(f"manifest {path}: complex_id {duplicated.iloc[0]!r} appears more than once")
