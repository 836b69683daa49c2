"""scores.csv's columns, and reading one back: today's names, and a file written before the rename."""

import numpy as np

from pecan.scoring.scores_csv import SCORE_COLUMNS, read_scores


def test_the_columns_are_the_glossarys():
    assert SCORE_COLUMNS == (
        "complex_id",
        "pose_id",
        "split",
        "pecan_score",
        "pecan_rank",
        "docking_score",
        "rmsd",
        "label",
    )


def test_a_scores_csv_reads_back_with_its_ids_as_text(tmp_path):
    path = tmp_path / "scores.csv"
    path.write_text(",".join(SCORE_COLUMNS) + "\n1e10,007,test,0.75,1,,,\nNA,nan,test,0.25,2,-8.5,1.5,1\n")
    scores = read_scores(path)
    assert list(scores.columns) == list(SCORE_COLUMNS)
    assert scores["complex_id"].tolist() == ["1e10", "NA"] and scores["pose_id"].tolist() == ["007", "nan"]
    assert scores["pecan_score"].tolist() == [0.75, 0.25] and scores["pecan_rank"].tolist() == [1, 2]
    assert np.isnan(scores["docking_score"].iloc[0]) and scores["docking_score"].iloc[1] == -8.5


def test_a_scores_csv_written_before_the_rename_reads_under_todays_names(tmp_path):
    path = tmp_path / "old.csv"
    path.write_text("complex,pose,split,score,rank,docking_score,rmsd,label\n1e10,007,val,0.75,1,-9.0,0.5,1\n")
    scores = read_scores(path)
    assert list(scores.columns) == list(SCORE_COLUMNS)
    assert scores["complex_id"].tolist() == ["1e10"] and scores["pose_id"].tolist() == ["007"]
    assert scores["pecan_score"].tolist() == [0.75] and scores["pecan_rank"].tolist() == [1]
