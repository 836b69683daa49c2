"""Soft targets from an index CSV column (data.target_column): checked by CSV line, the crystal pose's rule, and
carried by both readers' sample tables."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from pecan.data import targets
from pecan.data.loader import load_split_indexes, make_dataset, prepare_job_data
from pecan.data.sample import counters_to_dict
from pecan.runtime.errors import ConfigError, DataError
from tests.configs import make_config


def with_teacher(tmp_path: Path, edit=None) -> pd.DataFrame:
    """The tiny run's index CSV with a ``cnn`` column (docked poses 0.1 .. 0.9, crystal poses empty), edited."""
    make_config(tmp_path)  # writes tmp/data
    csv = tmp_path / "data" / "index.csv"
    frame = pd.read_csv(csv)
    docked = frame["is_crystal"] == 0
    frame["cnn"] = np.where(docked, np.linspace(0.1, 0.9, len(frame)).round(3), np.nan)
    if edit is not None:
        frame = edit(frame)
    frame.to_csv(csv, index=False)
    return frame


def config(tmp_path: Path, *overrides: str):
    return make_config(tmp_path, {"data.target_column": "cnn"}, *overrides, dataset={})[1]


def test_the_column_reaches_the_table_and_crystal_poses_have_none(tmp_path):
    frame = with_teacher(tmp_path)
    train, _ = load_split_indexes(config(tmp_path, "data.val_fraction=0").data)
    table = make_dataset(config(tmp_path).data, train, io_mode="hoist").table
    expected = frame.set_index(["pdbid", "poseid"])["cnn"]
    for i in range(len(table)):
        value = table.target[i]
        if table.is_crystal[i]:
            assert np.isnan(value)
        else:
            assert value == pytest.approx(expected[(table.complex_id[i], table.pose_id[i])])


def test_the_packed_reader_carries_it_too_by_sample_id(tmp_path):
    frame = with_teacher(tmp_path)
    data = config(tmp_path, "data.val_fraction=0").data
    job = prepare_job_data(data)
    dataset = make_dataset(data, job.train_index, job.packs)
    assert dataset.table.target is not None
    batch = dataset.__getitems__([0, 3, 5])
    expected = frame.set_index(["pdbid", "poseid"])["cnn"]
    for sample in batch.sample_id.tolist():
        t = dataset.table
        if not t.is_crystal[sample]:
            assert t.target[sample] == pytest.approx(expected[(t.complex_id[sample], t.pose_id[sample])])
    counts = counters_to_dict(batch.io_counts)
    assert counts["h5_file_opens"] == counts["h5_object_opens"] == counts["attr_reads"] == 0


def test_without_the_key_a_column_of_the_reserved_name_is_not_read(tmp_path):
    with_teacher(tmp_path, lambda f: f.assign(soft_target=0.5))
    _, cfg = make_config(tmp_path, None, "data.val_fraction=0", dataset={})
    train, _ = load_split_indexes(cfg.data)
    assert make_dataset(cfg.data, train, io_mode="hoist").table.target is None


@pytest.mark.parametrize(
    "cell, problem",
    [("1.5", "outside \\[0, 1\\]"), ("-0.1", "outside \\[0, 1\\]"), ("high", "not a number"), ("", "is empty")],
)
def test_a_bad_docked_cell_is_named_by_line_and_pose(tmp_path, cell, problem):
    def edit(frame):
        frame["cnn"] = frame["cnn"].astype(object)
        frame.loc[2, "cnn"] = cell
        return frame

    frame = with_teacher(tmp_path, edit)
    assert frame.loc[2, "is_crystal"] == 0
    pose = f"{frame.loc[2, 'pdbid']}/{frame.loc[2, 'poseid']}"
    with pytest.raises(DataError, match=f"line 4, column 'cnn' .*pose {pose}: .*{problem}"):
        load_split_indexes(config(tmp_path).data)


def test_a_crystal_cell_is_not_read(tmp_path):
    frame = with_teacher(tmp_path, lambda f: f.assign(cnn=f["cnn"].where(f["is_crystal"] == 0, 7.0)))
    train, _ = load_split_indexes(config(tmp_path, "data.val_fraction=0").data)
    assert train.loc[train["is_crystal"] == 1, targets.TARGET].isna().all()
    assert (frame["cnn"] == 7.0).any()


def test_a_missing_column_is_named(tmp_path):
    with_teacher(tmp_path)
    with pytest.raises(DataError, match="missing column 'teacher' named by data.target_column"):
        load_split_indexes(make_config(tmp_path, {"data.target_column": "teacher"}, dataset={})[1].data)


def test_settings_it_cannot_work_with_are_config_errors(tmp_path):
    with pytest.raises(ConfigError, match="column PECAN reads itself"):
        targets.check_setting("rmsd", ["index.csv"])
    with pytest.raises(ConfigError, match="data.train_csvs is empty"):
        targets.check_setting("cnn", [])


def test_padded_cells_are_read_as_their_numbers(tmp_path):
    frame = with_teacher(tmp_path, lambda f: f.assign(cnn=[f" {v} " if v == v else "" for v in f["cnn"]]))
    train, _ = load_split_indexes(config(tmp_path, "data.val_fraction=0").data)
    docked = train["is_crystal"] == 0
    assert train.loc[docked, targets.TARGET].notna().all()
    assert sorted(train.loc[docked, targets.TARGET]) == pytest.approx(
        sorted(frame.loc[frame["is_crystal"] == 0, "cnn"].astype(float))
    )
