"""The index CSV keeps the shard format's column names (pdbid, poseid, score: LLNL FAST's); code reads and
writes them as complex_id, pose_id and docking_score, translated where index CSVs are read and written."""

import pandas as pd
import pytest

from pecan.data import layout
from pecan.data.index_rows import read_index_csv, read_index_rows
from pecan.runtime.errors import DataError
from tests.shards import with_required_columns


def test_the_csv_names_and_the_code_names():
    assert layout.INDEX_CSV_NAMES == {"complex_id": "pdbid", "pose_id": "poseid", "docking_score": "score"}
    assert layout.INDEX_CSV_COLUMNS[:3] == ("shard", "pdbid", "poseid") and "score" in layout.INDEX_CSV_COLUMNS
    assert layout.REQUIRED_CSV_COLUMNS[:3] == ("shard", "pdbid", "poseid")


def test_an_index_written_in_code_names_is_a_csv_in_the_formats_names_and_reads_back(tmp_path):
    (tmp_path / "s.hdf5").touch()  # only its existence is checked here
    index = pd.DataFrame(
        {
            "shard": ["s.hdf5", "s.hdf5"],
            "complex_id": ["1e10", "1e10"],
            "pose_id": ["007", "NA"],
            "label": [1, 0],
            "rmsd": [0.5, 4.0],
            "affinity": [6.5, 6.5],
            "docking_score": [-7.25, float("nan")],
            **{name: [1.0, 0.0] for name in layout.INTERACTION_ATTRS},
            "is_crystal": [0, 0],
        }
    )
    path = layout.write_index_csv(index, tmp_path / "index.csv")
    assert path.read_text().splitlines()[0] == ",".join(layout.INDEX_CSV_COLUMNS)
    back = read_index_csv(path, str(tmp_path), 2.0)
    assert not {"pdbid", "poseid", "score"} & set(back.columns)
    assert back["complex_id"].tolist() == ["1e10", "1e10"] and back["pose_id"].tolist() == ["007", "NA"]
    assert back["docking_score"].iloc[0] == -7.25 and back["docking_score"].isna().iloc[1]
    rows = read_index_rows(path)  # as written: shards not resolved, nothing checked
    assert list(rows.columns) == list(layout.INDEX_COLUMNS) and rows["shard"].tolist() == ["s.hdf5", "s.hdf5"]
    assert rows["pose_id"].tolist() == ["007", "NA"]


def test_a_csv_with_a_column_under_both_names_keeps_one_copy_or_names_both(tmp_path):
    (tmp_path / "s.hdf5").touch()
    path = tmp_path / "index.csv"
    path.write_text(with_required_columns("shard,pdbid,poseid,complex_id,rmsd\ns.hdf5,a,a_1,a,1.0\n"))
    index = read_index_csv(path, str(tmp_path), 2.0)
    assert index["complex_id"].tolist() == ["a"] and list(index.columns).count("complex_id") == 1
    path.write_text(with_required_columns("shard,pdbid,poseid,score,docking_score,rmsd\ns.hdf5,a,a_1,-7,-9,1.0\n"))
    with pytest.raises(DataError, match=r"index\.csv: columns 'score' and 'docking_score' differ"):
        read_index_csv(path, str(tmp_path), 2.0)


def test_cell_errors_name_the_column_as_the_csv_spells_it(tmp_path):
    (tmp_path / "s.hdf5").touch()
    path = tmp_path / "index.csv"
    path.write_text(with_required_columns("shard,pdbid,poseid,rmsd,score\ns.hdf5,a,,1.0,-7\n"))
    with pytest.raises(DataError, match=r"line 2, column 'poseid': is empty"):
        read_index_csv(path, str(tmp_path), 2.0)
    path.write_text(with_required_columns("shard,pdbid,poseid,rmsd,score\ns.hdf5,a,a_1,1.0,low\n"))
    with pytest.raises(DataError, match=r"line 2, column 'score': is not a number: 'low'"):
        read_index_csv(path, str(tmp_path), 2.0)
