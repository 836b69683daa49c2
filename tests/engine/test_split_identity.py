"""The `split` column of `pecan score`/`pecan predict`: a complex is identified by its id whatever the case
(``1GPK_HUP`` is the ``1gpk_hup`` the model trained on), with a warning when only the case matched."""

import logging

import pandas as pd

from pecan.engine.pins import assign_splits

RECORD = {"train": ["1gpk_hup", "2abc"], "val": ["3DEF", "2abc"]}


def test_exact_ids_take_their_split_without_a_warning(caplog):
    with caplog.at_level(logging.WARNING):
        splits = assign_splits(pd.Series(["1gpk_hup", "3DEF", "2abc", "9zzz", "8yyy"]), RECORD, ["9zzz"])
    assert list(splits) == ["train", "val", "train", "test", "unseen"]
    assert not caplog.records


def test_an_id_in_another_case_is_the_same_complex_with_a_warning(caplog):
    with caplog.at_level(logging.WARNING):
        splits = assign_splits(pd.Series(["1GPK_HUP", "3def", "2ABC", " 1gpk_HUP "]), RECORD, [])
    assert list(splits) == ["train", "val", "train", "train"]
    (warning,) = caplog.records
    assert "4 scored complex id(s)" in warning.getMessage() and "'1GPK_HUP'" in warning.getMessage()


def test_test_inputs_match_whatever_the_case():
    assert list(assign_splits(pd.Series(["9ZZZ"]), RECORD, ["9zzz"])) == ["test"]


def test_no_record_is_unknown():
    assert list(assign_splits(pd.Series(["1GPK_HUP"]), None, [])) == ["unknown"]
