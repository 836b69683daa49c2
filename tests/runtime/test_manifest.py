"""pecan.runtime.manifest: a manifest CSV with a repeated header column, or that is no CSV, is
refused naming the file."""

from __future__ import annotations

import pytest


@pytest.mark.parametrize(
    "text, message",
    [
        ("complex_id,receptor,receptor\na,r.pdb,s.pdb\n", "column 'receptor' appears 2 times in the header"),
        ("", "is not a valid CSV"),
        ('complex_id,receptor\n"a,r.pdb\n', "is not a valid CSV"),
    ],
)
def test_manifest_csv_with_a_repeated_column_or_no_csv_is_named(tmp_path, text, message):
    from pecan.runtime.manifest import read_manifest_frame

    path = tmp_path / "manifest.csv"
    path.write_text(text)
    with pytest.raises(ValueError, match="manifest .*manifest.csv") as err:
        read_manifest_frame(path, ("complex_id", "receptor"), ())
    assert message in str(err.value)
