"""The numeric fields of an epoch record are one list (pecan/report.py) that `pecan runs` reads by, not a copy
that can drift from the fields a run writes."""

from pecan import report
from pecan.runs import records
from pecan.train.fit_check import FIT_FIELDS
from tests.test_report import record


def test_runs_reads_numbers_by_the_report_s_own_list():
    assert records.NUMBER_FIELDS == frozenset(report.NUMBER_FIELDS)


def test_every_required_field_is_a_number_field_unless_named_as_text():
    assert set(report.TEXT_FIELDS) <= set(report.REQUIRED_FIELDS)
    assert [f for f in report.REQUIRED_FIELDS if records.is_number_field(f) == (f in report.TEXT_FIELDS)] == []
    assert all(records.is_number_field(field) for field in (*FIT_FIELDS, "fit_check_s"))


def test_a_record_holds_a_number_exactly_in_its_number_fields():
    one = {**record(1), "val_acc": 0.5, "val_top1": 0.5, "fit_top1": 0.5, "fit_complexes": 3, "completed": False}
    for key, value in one.items():
        holds_number = isinstance(value, (int, float)) and not isinstance(value, bool)
        assert records.is_number_field(key) == holds_number, key
