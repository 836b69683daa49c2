"""An index CSV without its `shard` column: the error says what `shard` holds, not what `is_crystal` does."""

import pandas as pd
import pytest

from pecan.data import index as idx
from pecan.data import layout
from pecan.data.index import DataError
from tests.shards import write_shard


def test_a_missing_shard_column_is_explained_as_the_pose_s_file(tmp_path):
    write_shard(tmp_path / "s.hdf5", n_complexes=1, n_poses=3, crystal=False)
    counts = {name: 0.0 for name in layout.INTERACTION_ATTRS}
    rows = pd.DataFrame({"pdbid": "c000", "poseid": [f"c000_pose{p}" for p in range(3)], "is_crystal": 0, **counts})
    rows.to_csv(tmp_path / "index.csv", index=False)
    with pytest.raises(DataError) as caught:
        idx.read_index_csv(tmp_path / "index.csv", str(tmp_path), 2.0)
    message = str(caught.value)
    assert "missing required column(s) shard " in message
    assert "shard is the HDF5 file holding it" in message
    assert "is_crystal" not in message.split(");", 1)[1]  # no advice about a column that is there
