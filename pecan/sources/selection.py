"""What a reader keeps and leaves out, and how both are written: the manifest and excluded.csv beside it."""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from pecan.runtime.fileio import write_csv

EXCLUDED_COLUMNS = ("complex_id", "pose_id", "source", "reason")


@dataclass
class Selection:
    """Manifest rows kept and excluded rows (a complex, or one pose of it, with the reason)."""

    rows: list[dict] = field(default_factory=list)
    excluded: list[dict] = field(default_factory=list)

    def exclude(self, complex_id: str, source: str, reason: str, pose_id: str = "") -> None:
        """Record one complex (pose_id empty) or one pose left out."""
        self.excluded.append({"complex_id": complex_id, "pose_id": pose_id, "source": source, "reason": reason})

    def reserved_removed(self) -> Counter:
        """Reserved protein -> complexes (and poses) the filter removed."""
        return Counter(row["reason"].split(": ", 1)[1] for row in self.excluded if row["reason"].startswith("reserved"))


def relative(path: Path, base: Path) -> str:
    """``path`` relative to the manifest's folder (the manifests resolve relative paths against it)."""
    return os.path.relpath(Path(path).resolve(), Path(base).resolve())


def excluded_path(manifest: Path) -> Path:
    """Where a manifest's left-out rows go: ``excluded.csv`` beside ``manifest.csv``, ``<stem>.excluded.csv``
    beside any other name, so two manifests in one folder keep their own exclusions."""
    manifest = Path(manifest)
    name = "excluded.csv" if manifest.name == "manifest.csv" else f"{manifest.stem}.excluded.csv"
    return manifest.with_name(name)


def write_selection(selection: Selection, manifest: Path, columns: tuple[str, ...]) -> Path:
    """Write the manifest (``columns`` first, then every carried column) and its excluded rows beside it
    (``excluded_path``); returns that path."""
    frame = pd.DataFrame(selection.rows)
    if frame.empty:
        frame = pd.DataFrame(columns=list(columns))
    frame = frame[[*columns, *(c for c in frame.columns if c not in columns)]]
    write_csv(frame, manifest)
    excluded = excluded_path(manifest)
    write_csv(pd.DataFrame(selection.excluded, columns=list(EXCLUDED_COLUMNS)), excluded)
    return excluded


def summary_line(name: str, selection: Selection, manifest: Path, excluded: Path) -> str:
    """The reader's one-line report: kept, left out, what the reserved filter removed."""
    complexes = sum(1 for row in selection.excluded if not row["pose_id"])
    reserved = selection.reserved_removed()
    removed = ", ".join(f"{protein} {count}" for protein, count in sorted(reserved.items())) or "none"
    return (
        f"{name}: {len(selection.rows)} complexes -> {manifest}; {complexes} complexes and "
        f"{len(selection.excluded) - complexes} poses left out -> {excluded} (reserved test proteins removed: "
        f"{removed})"
    )
