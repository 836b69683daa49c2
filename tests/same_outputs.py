"""Comparing two output directories file by file: what a 1-rank and an N-rank run wrote must be the same."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

# Bookkeeping of which rank finished, not output.
RANK_FILES = ".ranks"
# The folder's plan names the rank, host and pid that wrote it (pecan.runtime.out_folder).
PLAN_FILE = ".pecan.plan.json"


def files_in(directory: Path) -> list[str]:
    """Every file under ``directory`` (hidden ones too), relative, sorted; the ranks' own records left out."""
    return sorted(
        str(p.relative_to(directory))
        for p in directory.rglob("*")
        if p.is_file() and RANK_FILES not in p.relative_to(directory).parts and p.name != PLAN_FILE
    )


def same_outputs(expected: Path, actual: Path, varying: tuple[str, ...] = ()) -> None:
    """Assert the same file list and the same bytes in each file; CSV columns and JSON keys named in
    ``varying`` (wall-clock times) are left out of the comparison."""
    names, others = files_in(expected), files_in(actual)
    assert names == others, (
        f"only in {expected}: {set(names) - set(others)}; only in {actual}: {set(others) - set(names)}"
    )
    for name in names:
        a, b = expected / name, actual / name
        if varying and name.endswith(".csv"):
            left, right = pd.read_csv(a, keep_default_na=False), pd.read_csv(b, keep_default_na=False)
            drop = [c for c in varying if c in left.columns]
            pd.testing.assert_frame_equal(left.drop(columns=drop), right.drop(columns=drop), obj=name)
        elif varying and name.endswith(".json"):
            left, right = json.loads(a.read_text()), json.loads(b.read_text())
            assert {k: v for k, v in left.items() if k not in varying} == {
                k: v for k, v in right.items() if k not in varying
            }, name
        elif name.endswith(".hdf5"):
            assert hdf5_content(a) == hdf5_content(b), f"{name}: contents differ"
        else:
            assert a.read_bytes() == b.read_bytes(), f"{name} differs"


def hdf5_content(path: Path) -> dict:
    """Every group's and dataset's attributes, every dataset's dtype, filter and raw bytes, by name. LZF's
    encoder may compress the same bytes differently from one process to the next (its hash table is not
    cleared), so two shards with the same content need not be the same file."""
    import h5py

    content = {}

    def visit(name, item):
        attrs = {
            k: (
                str(v)
                if getattr(v, "dtype", None) is None
                else (v.dtype.str, v.tobytes() if hasattr(v, "tobytes") else v)
            )
            for k, v in item.attrs.items()
        }
        if isinstance(item, h5py.Dataset):
            content[name] = (attrs, item.dtype.str, item.shape, item.compression, item[()].tobytes())
        else:
            content[name] = attrs

    with h5py.File(path, "r") as h5:
        content["/"] = {k: str(v) for k, v in h5.attrs.items()}
        h5.visititems(visit)
    return content
