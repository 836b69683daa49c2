"""pecan.runtime.numbers: a number in a text field is read as written, or refused naming where it was."""

import pytest

from pecan.runtime.errors import DataError, NotANumber
from pecan.runtime.numbers import DASHES, number_or_none, read_docking_score, read_number


@pytest.mark.parametrize(
    "text, value",
    [("-9.1", -9.1), ("  -9.1\n", -9.1), ("+7", 7.0), (".5", 0.5), ("5.", 5.0), ("1e-3", 1e-3), ("0", 0.0)],
)
def test_one_finite_number(text, value):
    assert read_number(text, "where") == value


@pytest.mark.parametrize("dash", list(DASHES))
def test_every_dash_variant_is_a_minus(dash):
    assert read_number(f"{dash}10.6", "where") == -10.6


def test_unicode_minus_is_not_read_as_plus():
    assert read_number("\u221210.6", "where") == -10.6
    assert read_docking_score("\u221210.6", "where") == -10.6


@pytest.mark.parametrize(
    "text",
    ["failed (code 2)", "nan", "NaN", "inf", "-Infinity", "", "  ", "1,5", "1_000", "0x10", "-9.1 kcal/mol", "--1"],
)
def test_anything_else_is_not_a_number(text):
    assert number_or_none(text) is None
    with pytest.raises(NotANumber, match=r"poses\.sdf record 3, SD property 'score': .* is not a number"):
        read_number(text, "poses.sdf record 3, SD property 'score'")


def test_not_a_number_is_a_data_error():
    assert issubclass(NotANumber, DataError)


def test_vina_result_remark_is_its_energy():
    assert read_docking_score(" VINA RESULT:    -9.1      0.000      0.000", "x") == -9.1
    assert read_docking_score("VINA RESULT: \u22127.25 1.2 3.4", "x") == -7.25


@pytest.mark.parametrize("text", ["failed (code 2)", "score -9.1", "VINA RESULT: -9.1", "Vina -9.1 0 0", "nan"])
def test_free_text_is_not_a_docking_score(text):
    with pytest.raises(NotANumber, match="--scores-csv"):
        read_docking_score(text, "f.sdf record 1, SD property 'REMARK'")


def test_vina_result_among_vinas_other_remarks_is_its_energy():
    remarks = " VINA RESULT:    -7.3      0.000      0.000\n INTER + INTRA:  -9.5\n INTER:  -9.2\n NAME: lig"
    assert read_docking_score(remarks, "x") == -7.3
    with pytest.raises(NotANumber):  # two results: which one is meant is a guess
        read_docking_score(" VINA RESULT: -7.3 0 0\n VINA RESULT: -6.1 1 2", "x")


def test_a_vina_pdbqt_remark_is_read_as_every_docking_score():
    from pecan.scoring.pdbqt import vina_scores

    text = "MODEL 1\nREMARK VINA RESULT:    \u22129.1      0.000      0.000\nENDMDL\n"
    assert vina_scores(text, "out.pdbqt") == [-9.1]
    with pytest.raises(NotANumber, match="out.pdbqt: REMARK VINA RESULT of pose 2: 'nan' is not a number"):
        vina_scores(text + "MODEL 2\nREMARK VINA RESULT:    nan      0.000      0.000\nENDMDL\n", "out.pdbqt")
