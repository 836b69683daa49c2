"""The index CSV a run reads: duplicated rows, a shard listed twice, labels, rmsd, counts and flags that
cannot be, labels that contradict their rmsd, the rmsd threshold under label_source=rmsd, header columns
missing or repeated, a wrong shard path, an unreadable CSV, nothing usable left, a missing data_dir, and
which file was read when the working directory holds another index.csv."""

from __future__ import annotations

import pandas as pd
import pytest

from tests.app_run import edit_csv, records, run


def test_absurd_interaction_count_names_csv_line(tmp_path, data_dir, caplog, capsys):
    edit_csv(data_dir, lambda f: f.assign(num_hbonds=[3e38] + list(f["num_hbonds"][1:])))
    code, text = run(tmp_path, data_dir, caplog=caplog, capsys=capsys)
    assert code == 1 and "index.csv: line 2" in text and "num_hbonds must be a finite count" in text


def test_is_crystal_other_than_0_1_names_line(tmp_path, data_dir, caplog, capsys):
    edit_csv(data_dir, lambda f: f.assign(is_crystal=[0.5] + list(f["is_crystal"][1:])))
    code, text = run(tmp_path, data_dir, "data.use_crystal=false", caplog=caplog, capsys=capsys)
    assert code == 1 and "index.csv: line 2" in text and "is_crystal must be 0 or 1 (got 0.5)" in text


@pytest.mark.slow
def test_label_contradicting_rmsd_is_an_error_or_a_counted_warning(tmp_path, data_dir, caplog, capsys):
    edit_csv(data_dir, lambda f: f.assign(label=[1] + list(f["label"][1:]), rmsd=[9.5] + list(f["rmsd"][1:])))
    code, text = run(tmp_path, data_dir, caplog=caplog, capsys=capsys)
    assert code == 1 and "index.csv: pose c000/c000_pose0" in text and "has label 1 but rmsd 9.5" in text
    assert "1 of 24 labelled rows contradict" in text
    code, text = run(
        tmp_path, data_dir, "data.label_conflict=warn", "train.max_steps_per_epoch=1", caplog=caplog, capsys=capsys
    )
    assert code == 0 and "training on the stored labels" in text


@pytest.mark.slow
def test_rmsd_threshold_takes_effect_under_label_source_rmsd(tmp_path, data_dir, caplog, capsys):
    # Every docked pose has rmsd < 6 (tests.shards): threshold 7 makes them all positive, i.e. one class.
    code, text = run(tmp_path, data_dir, "data.rmsd_threshold=7.0", caplog=caplog, capsys=capsys)
    assert code == 1 and "contradict their rmsd" in text  # auto: stored labels disagree at 7 A
    code, text = run(
        tmp_path, data_dir, "data.rmsd_threshold=7.0", "data.label_source=rmsd", caplog=caplog, capsys=capsys
    )
    assert code == 1 and "single-class training set" in text and "data.allow_single_class" in text
    code, text = run(
        tmp_path,
        data_dir,
        "data.rmsd_threshold=7.0",
        "data.label_source=rmsd",
        "data.allow_single_class=true",
        "train.max_steps_per_epoch=1",
        caplog=caplog,
        capsys=capsys,
    )
    assert code == 0, text


def test_no_usable_samples_left_says_why(tmp_path, data_dir, caplog, capsys):
    edit_csv(data_dir, lambda f: f.assign(label=2))
    code, text = run(tmp_path, data_dir, "data.on_bad_sample=skip", caplog=caplog, capsys=capsys)
    assert code == 1
    assert "no usable samples left after dropping" in text
    assert "label must be 0 or 1" in text.split("no usable samples left")[1]


@pytest.mark.parametrize("column", ["is_crystal", "num_hbonds", "pbond"])
def test_index_csv_without_a_column_that_changes_training_is_named(tmp_path, data_dir, caplog, capsys, column):
    """Without is_crystal every crystal pose would count as docked; without a count every pose would read 0."""
    edit_csv(data_dir, lambda f: f.drop(columns=[column]))
    code, text = run(tmp_path, data_dir, caplog=caplog, capsys=capsys)
    assert code == 1
    assert "index.csv" in text and f"missing required column(s) {column}" in text


def test_index_csv_with_a_header_column_twice_is_named(tmp_path, data_dir, caplog, capsys):
    csv = data_dir / "index.csv"
    lines = csv.read_text().splitlines()
    lines = [lines[0] + ",label"] + [line + ",0" for line in lines[1:]]
    csv.write_text("\n".join(lines) + "\n")
    code, text = run(tmp_path, data_dir, caplog=caplog, capsys=capsys)
    assert code == 1
    assert "index.csv" in text and "column 'label' appears 2 times in the header" in text


def test_csv_in_working_directory_that_differs_is_an_error_naming_both(tmp_path, data_dir, caplog, capsys, monkeypatch):
    elsewhere = tmp_path / "other_set"
    elsewhere.mkdir()
    pd.read_csv(data_dir / "index.csv").iloc[:8].to_csv(elsewhere / "index.csv", index=False)
    monkeypatch.chdir(elsewhere)
    code, text = run(tmp_path, data_dir, caplog=caplog, capsys=capsys)
    assert code == 1 and "is ambiguous" in text
    assert str(data_dir / "index.csv") in text and str(elsewhere / "index.csv") in text
    (elsewhere / "index.csv").unlink()
    code, text = run(tmp_path, data_dir, "train.max_steps_per_epoch=1", caplog=caplog, capsys=capsys)
    assert code == 0 and f"reading index CSV {data_dir / 'index.csv'}" in text and f"shards from {data_dir}" in text


def test_duplicated_csv_rows_error_naming_line(tmp_path, data_dir, caplog, capsys):
    edit_csv(data_dir, lambda f: pd.concat([f, f.iloc[:5]], ignore_index=True))
    code, text = run(tmp_path, data_dir, caplog=caplog, capsys=capsys)
    assert code == 1
    assert "index.csv" in text and "duplicate sample" in text and "5 such row(s)" in text
    assert not (tmp_path / "run" / ".pecan.lock").exists()  # a failed start releases out_dir
    assert not (tmp_path / "run" / "config.yaml").exists()  # written only after a successful start


def test_duplicated_csv_rows_dropped_with_count_under_skip(tmp_path, data_dir, caplog, capsys):
    edit_csv(data_dir, lambda f: pd.concat([f, f.iloc[:5]], ignore_index=True))
    code, text = run(
        tmp_path, data_dir, "data.on_bad_sample=skip", "train.max_steps_per_epoch=1", caplog=caplog, capsys=capsys
    )
    assert code == 0, text
    assert records(tmp_path)[0]["skipped_at_start"] == 5
    assert "24 samples of 6 complexes (5 bad row(s) dropped)" in text


def test_shard_listed_twice_is_an_error(tmp_path, data_dir, caplog, capsys):
    code, text = run(
        tmp_path,
        data_dir,
        "data.train_csvs=null",
        'data.train_fns=["*.hdf5", "shard_0.hdf5"]',
        caplog=caplog,
        capsys=capsys,
    )
    assert code == 1 and "shard_0.hdf5 is listed more than once" in text


@pytest.mark.parametrize("label", [2, -1])
def test_label_outside_0_1_names_line(tmp_path, data_dir, caplog, capsys, label):
    edit_csv(data_dir, lambda f: f.assign(label=[label] + list(f["label"][1:])))
    code, text = run(tmp_path, data_dir, caplog=caplog, capsys=capsys)
    assert code == 1
    assert "index.csv: line 2" in text and "label must be 0 or 1" in text and f"got {label}" in text


def test_non_numeric_label_names_file_line_column(tmp_path, data_dir, caplog, capsys):
    edit_csv(data_dir, lambda f: f.assign(label=["yes"] + list(f["label"][1:])))
    code, text = run(tmp_path, data_dir, caplog=caplog, capsys=capsys)
    assert code == 1 and "index.csv, line 2, column 'label': is not a number: 'yes'" in text


def test_negative_rmsd_names_pose(tmp_path, data_dir, caplog, capsys):
    edit_csv(data_dir, lambda f: f.assign(rmsd=list(f["rmsd"][:3]) + [-0.5] + list(f["rmsd"][4:])))
    code, text = run(tmp_path, data_dir, caplog=caplog, capsys=capsys)
    assert code == 1 and "line 5" in text and "rmsd must be >= 0" in text


def test_csv_missing_column_is_an_error_not_a_fallback(tmp_path, data_dir, caplog, capsys):
    edit_csv(data_dir, lambda f: f.drop(columns=["poseid"]))
    code, text = run(tmp_path, data_dir, 'data.train_fns=["*.hdf5"]', caplog=caplog, capsys=capsys)
    assert code == 1 and "index.csv: missing required column(s) poseid" in text
    assert "deriving the index" not in text


def test_csv_wrong_shard_path_names_line_and_column(tmp_path, data_dir, caplog, capsys):
    edit_csv(data_dir, lambda f: f.assign(shard=["shard_9.hdf5"] + list(f["shard"][1:])))
    code, text = run(tmp_path, data_dir, 'data.train_fns=["*.hdf5"]', caplog=caplog, capsys=capsys)
    assert code == 1 and "line 2, column 'shard': shard file not found" in text and "shard_9.hdf5" in text


@pytest.mark.parametrize("how", ["missing", "directory"])
def test_unreadable_csv_falls_back_to_the_shards(tmp_path, data_dir, caplog, capsys, how):
    (data_dir / "index.csv").unlink()
    if how == "directory":
        (data_dir / "index.csv").mkdir()
    code, text = run(
        tmp_path, data_dir, 'data.train_fns=["*.hdf5"]', "train.max_steps_per_epoch=1", caplog=caplog, capsys=capsys
    )
    assert code == 0, text
    assert "cannot read index CSV" in text and "deriving the index" in text


def test_missing_data_dir_names_it(tmp_path, data_dir, caplog, capsys):
    code, text = run(tmp_path, data_dir, f"data.data_dir={tmp_path / 'nothing'}", caplog=caplog, capsys=capsys)
    assert code == 1 and "nothing" in text
